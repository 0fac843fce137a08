"""A loopback HTTP server that answers the Hugging Face hub's file-download requests for models kept
in local folders, so the real download path of huggingface_hub and transformers runs without the
internet. `HF_ENDPOINT=<stub.url>` points them at it.

Repositories are served as `resolve/<revision>/<file>` with the headers huggingface_hub reads
(`X-Repo-Commit`, `ETag`, `Content-Length`); a gated repository answers 403 with
`X-Error-Code: GatedRepo` to a request without a token, and an unknown one 401 with
`X-Error-Code: RepoNotFound`, as the hub does. Every request path is recorded.
"""

from __future__ import annotations

import hashlib
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

_RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<revision>[^/]+)/(?P<file>.+)$")
_API_MODEL = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)(?:/revision/(?P<revision>[^/]+))?$")
_API_TREE = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)/tree/(?P<revision>[^/]+)(?:/(?P<file>.*))?$")
COMMIT = "0123456789abcdef0123456789abcdef01234567"


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


class HubStub:
    def __init__(self) -> None:
        self.repos: dict[str, Path] = {}
        self.gated: set[str] = set()
        self.token = "hf_stubtoken000000000000000000000000"
        self.requests: list[str] = []
        self._server: _QuietServer | None = None

    def add(self, repo: str, folder: Path, gated: bool = False) -> None:
        self.repos[repo] = folder
        if gated:
            self.gated.add(repo)

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> HubStub:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_HEAD(self) -> None:  # noqa: N802 - http.server's naming
                self._answer(body=False)

            def do_GET(self) -> None:  # noqa: N802
                self._answer(body=True)

            def _answer(self, body: bool) -> None:
                path = self.path.split("?", 1)[0]
                stub.requests.append(f"{self.command} {path}")
                match = _RESOLVE.match(path) or _API_TREE.match(path) or _API_MODEL.match(path)
                repo = match.group("repo") if match else None
                if repo is None or repo not in stub.repos:
                    return self._error(401, "RepoNotFound", "Repository Not Found")
                if repo in stub.gated and self.headers.get("Authorization") != f"Bearer {stub.token}":
                    return self._error(403, "GatedRepo", f"Access to model {repo} is restricted.")
                folder = stub.repos[repo]
                if match.re is _API_TREE:
                    # Only a folder listing transformers asks for (extra chat templates): none here.
                    return self._error(404, "EntryNotFound", "Entry not found")
                if match.re is _API_MODEL:
                    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
                    import json

                    payload = json.dumps(
                        {"id": repo, "sha": COMMIT, "siblings": [{"rfilename": f} for f in files]}
                    ).encode()
                    return self._send(200, payload, {"Content-Type": "application/json"}, body)
                target = folder / match.group("file")
                if not target.is_file():
                    return self._error(404, "EntryNotFound", "Entry not found")
                data = target.read_bytes()
                etag = hashlib.sha256(data).hexdigest()
                self._send(200, data, {"X-Repo-Commit": COMMIT, "ETag": f'"{etag}"'}, body)

            def _error(self, status: int, code: str, message: str) -> None:
                payload = ('{"error": "' + message + '"}').encode()
                self._send(status, payload, {"X-Error-Code": code, "X-Error-Message": message}, True)

            def _send(self, status: int, data: bytes, headers: dict[str, str], body: bool) -> None:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if body:
                    self.wfile.write(data)

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
