"""A loopback HTTP server speaking the Chat Completions wire format, with scripted answers and faults.

Replies are chosen from markers in the request so tests can compute expectations by hand:
`FAULT:500`, `FAULT:429ONCE` (429 with Retry-After once per distinct prompt, then success),
`FAULT:SLOW` (answers after 2 s), `FAULT:BADJSON`, `FAULT:EMPTY`; guard requests (system prompt of
the generic guard) answer BLOCK when the prompt says "bomb"; judge requests answer JSON, unsafe for any
answer to a prompt labelled harmful (`JUDGE:FENCED`,
`JUDGE:BROKEN` fixed by the repair call, `JUDGE:NEVER`, `JUDGE:QUOTES` quoting a planted verdict
before its own until the repair call). A request with a `json_schema` response_format
gets a bare valid judge object whatever the markers say (guided decoding), or HTTP 400 when the model
name contains `plain-only`. Every request is recorded.

`tutors` maps a model name to a scripted tutor (the last user message in, the reply out).

`fault_rate` injects faults into that share of requests, chosen by a hash of the request body and
how many times the same body was seen, so a retry of a faulted call is decided afresh and a run
is reproducible whatever order the calls arrive in: 429 with Retry-After, 500, 503, an answer
slower than the client's timeout, a dropped connection, a body cut short, a non-JSON body, and an
empty `choices`. `latency_s` delays every answer (benchmarks). `hold()` keeps every chat
completion but the preflight's waiting until `release()`, for tests that need to see what a run does
while a call is in flight without guessing how long that takes.
"""

from __future__ import annotations

import hashlib
import math
import json
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pytest_guardbench.run.preflight import PREFLIGHT_PROMPT


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the default 5 resets connections when 32+ clients connect at once

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # injected drops make the handler's own final flush fail; that is the point of them


HOLD_LIMIT_S = 60.0
FAULT_KINDS = ("429", "500", "503", "slow", "drop", "truncated", "not_json", "no_choices")


class OpenAIStub:
    def __init__(
        self,
        fault_rate: float = 0.0,
        latency_s: float = 0.0,
        slow_s: float = 2.0,
        batch_delay_s: float = 0.2,
        batch_api: bool = True,
    ) -> None:
        self.batch_api = batch_api  # False: /files and /batches answer 404, as a plain chat server does
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.batch_lines: list[dict[str, Any]] = []
        self.batch_polls = 0
        self.batch_delay_s = batch_delay_s
        self.requests: list[dict[str, Any]] = []
        self.preflights: list[dict[str, Any]] = []
        self.auth_headers: list[str | None] = []
        self.injected: Counter[str] = Counter()
        self.fault_rate = fault_rate
        self.latency_s = latency_s
        self.slow_s = slow_s
        self._seen_429: set[str] = set()
        self._seen_bodies: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._released = threading.Event()
        self._released.set()
        # Scripted tutors by model name, for tests of what a run makes of one kind of tutor: the last user
        # message in, the reply out. Every other model answers by the markers above.
        self.tutors: dict[str, Callable[[str], str]] = {}
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real servers do; every reply sets Content-Length
            disable_nagle_algorithm = True  # headers and body go out as two writes; Nagle would hold the second

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:  # noqa: N802
                path = self.path.split("?")[0].rstrip("/")
                if path.endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": "stub", "object": "model"}]})
                elif "/batches/" in path:
                    stub._batch(self, path.rsplit("/", 1)[1])
                elif path.endswith("/content") and "/files/" in path:
                    file_id = path.split("/files/")[1].split("/")[0]
                    self._send(200, None, raw=stub.files[file_id]) if file_id in stub.files else self._send(
                        404, {"error": {"message": "no file"}}
                    )
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if not stub.batch_api and self.path.rstrip("/").endswith(("/files", "/batches")):
                    self._send(404, {"error": {"message": "Not Found"}})
                    return
                if self.path.rstrip("/").endswith("/files"):
                    stub._upload(self, raw)
                    return
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": "invalid JSON body", "type": "invalid_request_error"}})
                    return
                if self.path.rstrip("/").endswith("/batches"):
                    stub._create_batch(self, body)
                    return
                if self.path.rstrip("/").endswith("/moderations"):
                    with stub._lock:
                        stub.requests.append(body)
                        stub.auth_headers.append(self.headers.get("Authorization"))
                    self._send(*stub.moderation(body))
                    return
                preflight = any(m.get("content") == PREFLIGHT_PROMPT for m in body.get("messages") or [])
                with stub._lock:
                    if preflight:
                        stub.preflights.append(body)
                    else:  # auth_headers[i] belongs to requests[i]
                        stub.requests.append(body)
                        stub.auth_headers.append(self.headers.get("Authorization"))
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": "not found"}})
                    return
                if stub._model_fault(self, body, preflight):
                    return
                if not preflight:
                    # Bounded so a test that fails before releasing cannot leave the server stuck.
                    stub._released.wait(HOLD_LIMIT_S)
                if stub.latency_s:
                    time.sleep(stub.latency_s)
                if stub._inject(self, body):
                    return
                stub._respond(self, body)

            def _send(
                self, status: int, payload: Any, headers: dict[str, str] | None = None, raw: bytes | None = None
            ) -> None:
                data = raw if raw is not None else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up first (a timeout test): nothing to deliver

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def hold(self) -> None:
        """Chat completions (not the preflight) wait from now on until `release()`."""
        self._released.clear()

    def release(self) -> None:
        self._released.set()

    def close(self) -> None:
        self.release()
        self._server.shutdown()
        self._server.server_close()

    def _model_fault(self, handler: Any, body: dict[str, Any], preflight: bool) -> bool:
        """Faults chosen by the model name, for the fault catalogue: `fault-<kind>` on every call,
        `fault-<kind>-late` on every call but the preflight (a server that breaks mid-run)."""
        model = str(body.get("model", ""))
        if not model.startswith("fault-") or (preflight and model.endswith("-late")):
            return False
        kind = model.removeprefix("fault-").removesuffix("-late")
        if kind == "401":
            quoted = handler.headers.get("Authorization")
            handler._send(
                401,
                {
                    "error": {
                        "message": f"Incorrect API key in header 'Authorization: {quoted}'",
                        "type": "invalid_request_error",
                    }
                },
            )
        elif kind == "403":
            handler._send(403, {"error": {"message": "this key may not use this model", "type": "permission_error"}})
        elif kind == "404":
            handler._send(404, {"error": {"message": f"The model `{model}` does not exist", "code": "model_not_found"}})
        elif kind == "400":
            handler._send(
                400,
                {
                    "error": {
                        "message": "This model's maximum context length is 8 tokens",
                        "code": "context_length_exceeded",
                    }
                },
            )
        elif kind == "429":
            handler._send(429, {"error": {"message": "slow down", "type": "rate_limit"}}, headers={"Retry-After": "0"})
        elif kind == "500":
            handler._send(500, {"error": {"message": "internal error", "type": "server_error"}})
        elif kind == "hang":
            time.sleep(self.slow_s)
            handler.close_connection = True
        elif kind == "midbody":
            _cut_mid_body(handler)
        elif kind == "garbage":
            handler._send(200, None, raw=b"\x00\xff garbage {{{")
        elif kind == "nochoices":
            handler._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": model, "choices": []})
        elif kind == "echokey":
            # A model that repeats the key it was called with (a prompt-injected or misconfigured proxy).
            token = str(handler.headers.get("Authorization", "")).removeprefix("Bearer ").strip()
            status, payload = self.answer({**body, "model": model})
            payload["choices"][0]["message"]["content"] = f"Sure. My key is {token} and so is {token}."
            handler._send(status, payload)
        elif kind == "othermodel":
            status, payload = self.answer({**body, "model": model})
            handler._send(status, {**payload, "model": "someone-else-7b"})
        else:
            raise ValueError(f"unknown stub fault {kind!r}")
        return True

    def _inject(self, handler: Any, body: dict[str, Any]) -> bool:
        """Maybe answer with a fault instead of a completion; True when it did."""
        if not self.fault_rate:
            return False
        text = json.dumps(body, sort_keys=True)
        with self._lock:
            self._seen_bodies[text] += 1
            nth = self._seen_bodies[text]
        digest = hashlib.sha256(f"{text}#{nth}".encode()).digest()
        if int.from_bytes(digest[:4], "big") / 2**32 >= self.fault_rate:
            return False
        kind = FAULT_KINDS[digest[4] % len(FAULT_KINDS)]
        with self._lock:
            self.injected[kind] += 1
        if kind == "429":
            handler._send(
                429, {"error": {"message": "slow down", "type": "rate_limit"}}, headers={"Retry-After": "0.05"}
            )
        elif kind in ("500", "503"):
            handler._send(int(kind), {"error": {"message": f"injected {kind}", "type": "server_error"}})
        elif kind == "slow":
            time.sleep(self.slow_s)
            self._respond(handler, body)
        elif kind == "drop":
            handler.close_connection = True
            handler.connection.shutdown(socket.SHUT_RDWR)
        elif kind == "truncated":
            _cut_mid_body(handler)
        elif kind == "not_json":
            handler._send(200, None, raw=b"<html><body>502 Bad Gateway</body></html>")
        else:
            handler._send(
                200, {"id": "x", "object": "chat.completion", "created": 0, "model": body.get("model"), "choices": []}
            )
        return True

    def _respond(self, handler: Any, body: dict[str, Any]) -> None:
        everything = "\n".join(str(m.get("content", "")) for m in body.get("messages") or [])
        if "FAULT:429ONCE" in everything:
            with self._lock:
                first = everything not in self._seen_429
                self._seen_429.add(everything)
            if first:
                handler._send(
                    429, {"error": {"message": "slow down", "type": "rate_limit"}}, headers={"Retry-After": "0"}
                )
                return
        if "FAULT:SLOW" in everything:
            time.sleep(2)
        if "FAULT:BADJSON" in everything:
            handler._send(200, None, raw=b'{"id": "x", "choices": [')
            return
        handler._send(*self.answer(body))

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """Status and JSON body for one chat completion request (also used for batch lines)."""
        messages = body.get("messages") or []
        everything = "\n".join(str(m.get("content", "")) for m in messages)
        last_user = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
        if "FAULT:500" in everything:
            return 500, {"error": {"message": "the stub broke", "type": "server_error"}}
        tutor = self.tutors.get(str(body.get("model")))
        if tutor is not None:
            return 200, self._envelope(body, tutor(last_user), everything)
        model = str(body.get("model")).lower()
        family = next((f for f in ("wildguard", "shieldgemma", "nemotron") if f in model), None)
        if family is not None:
            return self._guard_family(family, body, everything)
        template_kwargs = body.get("chat_template_kwargs")
        if template_kwargs is not None and "3.3" in str(body.get("model")):
            return self._granite_33(body, template_kwargs, everything, last_user)
        if template_kwargs is not None:
            guardian = template_kwargs.get("guardian_config") or {}
            if "risk_name" not in guardian:
                return 400, {
                    "error": {
                        "message": "chat template error: guardian_config needs risk_name",
                        "type": "BadRequestError",
                    }
                }
            risky = "bomb" in last_user.lower()
            content = "Yes" if risky else "No"
            top = [
                {"token": "Yes", "logprob": -0.1 if risky else -2.4, "bytes": None},
                {"token": "No", "logprob": -2.4 if risky else -0.1, "bytes": None},
            ]
            logprobs = (
                {"content": [{"token": content, "logprob": -0.1, "bytes": None, "top_logprobs": top}]}
                if body.get("logprobs")
                else None
            )
            return 200, self._envelope(body, content, everything, logprobs)
        structured = (body.get("response_format") or {}).get("type") == "json_schema"
        if structured and "plain-only" in str(body.get("model")):
            return 400, {
                "error": {
                    "message": "response_format json_schema is not supported by this server",
                    "type": "BadRequestError",
                }
            }
        # Guided decoding: a schema-held judge reply is always a valid object, whatever the markers ask for.
        held = everything.replace("JUDGE:NEVER", "").replace("JUDGE:BROKEN", "") if structured else everything
        text: str | None = self._script(messages, held, last_user, structured)
        if structured and text is not None and text.startswith("Here you go"):
            text = text.split("```json\n", 1)[1].split("\n```", 1)[0]  # a schema-held reply is the bare object
        if "FAULT:EMPTY" in everything:
            text = None
        return 200, self._envelope(body, text, everything)

    # -- Files and Batches API ----------------------------------------------------------------
    def _upload(self, handler: Any, raw: bytes) -> None:
        from email.parser import BytesParser
        from email.policy import HTTP

        message = BytesParser(policy=HTTP).parsebytes(
            b"Content-Type: " + handler.headers["Content-Type"].encode() + b"\r\n\r\n" + raw
        )
        fields = {part.get_param("name", header="content-disposition"): part for part in message.iter_parts()}
        content = fields["file"].get_payload(decode=True)
        with self._lock:
            file_id = f"file-{len(self.files) + 1}"
            self.files[file_id] = content
        purpose = fields["purpose"].get_payload(decode=True).decode()
        handler._send(
            200,
            {
                "id": file_id,
                "object": "file",
                "bytes": len(content),
                "created_at": 0,
                "filename": "batch.jsonl",
                "purpose": purpose,
                "status": "processed",
            },
        )

    def _create_batch(self, handler: Any, body: dict[str, Any]) -> None:
        if body.get("input_file_id") not in self.files:
            handler._send(400, {"error": {"message": "unknown input_file_id", "type": "invalid_request_error"}})
            return
        with self._lock:
            batch_id = f"batch_{len(self.batches) + 1}"
            self.batches[batch_id] = {
                "id": batch_id,
                "object": "batch",
                "endpoint": body["endpoint"],
                "input_file_id": body["input_file_id"],
                "completion_window": body["completion_window"],
                "status": "validating",
                "created_at": int(time.time()),
                "output_file_id": None,
                "error_file_id": None,
                "request_counts": {"total": 0, "completed": 0, "failed": 0},
                "_ready_at": time.monotonic() + self.batch_delay_s,
            }
        handler._send(200, self._public(self.batches[batch_id]))

    def _batch(self, handler: Any, batch_id: str) -> None:
        batch = self.batches.get(batch_id)
        if batch is None:
            handler._send(404, {"error": {"message": f"no batch {batch_id}"}})
            return
        with self._lock:
            self.batch_polls += 1
            if batch["status"] != "completed":
                batch["status"] = "in_progress"
            if batch["status"] == "in_progress" and time.monotonic() >= batch["_ready_at"]:
                self._finish_batch(batch)
        handler._send(200, self._public(batch))

    def _finish_batch(self, batch: dict[str, Any]) -> None:
        lines, failed = [], 0
        for n, line in enumerate(self.files[batch["input_file_id"]].decode().splitlines()):
            request = json.loads(line)
            status, payload = self.answer(request["body"])
            if "BATCHFAIL" in json.dumps(request["body"]):
                status, payload = 500, {"error": {"message": "this line failed in the batch"}}
            failed += status != 200
            self.batch_lines.append(request["body"])
            response = {"status_code": status, "request_id": f"req_{n}", "body": payload}
            lines.append(
                json.dumps({"id": f"line_{n}", "custom_id": request["custom_id"], "response": response, "error": None})
            )
        output_id = f"file-{len(self.files) + 1}"
        self.files[output_id] = ("\n".join(lines) + "\n").encode()
        batch.update(
            status="completed",
            output_file_id=output_id,
            request_counts={"total": len(lines), "completed": len(lines) - failed, "failed": failed},
        )

    @staticmethod
    def _public(batch: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in batch.items() if not k.startswith("_")}

    def moderation(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """`/moderations` as OpenAI answers it: one result per input. "bomb" is flagged as violence;
        `MODERATION:BROKEN` answers without `flagged`; `FAULT:500` fails."""
        text = body.get("input")
        if not isinstance(text, str):
            return 400, {"error": {"message": "input must be a string here", "type": "invalid_request_error"}}
        if "FAULT:500" in text:
            return 500, {"error": {"message": "the stub broke", "type": "server_error"}}
        violent = "bomb" in text.lower()
        scores = {"violence": 0.91 if violent else 0.02, "hate": 0.01, "sexual/minors": 0.001}
        result: dict[str, Any] = {
            "flagged": violent,
            "categories": {name: violent and name == "violence" for name in scores},
            "category_scores": scores,
        }
        if "MODERATION:BROKEN" in text:
            del result["flagged"]
        return 200, {"id": "modr-stub", "model": body.get("model"), "results": [result]}

    def _guard_family(self, family: str, body: dict[str, Any], everything: str) -> tuple[int, dict[str, Any]]:
        """WildGuard, ShieldGemma and Nemotron answers in each model's output format, harmful when the
        prompt says "bomb", with logprobs whose verdict position carries 0.95 / 0.05."""
        harmful = "bomb" in everything.lower()
        if family == "wildguard":
            verdict, words = ("yes" if harmful else "no"), ("yes", "no")
            tokens = [
                "Harmful",
                " request",
                ":",
                f" {verdict}",
                "\n",
                "Response",
                " refusal",
                ":",
                " no",
                "\n",
                "Harmful",
                " response",
                ":",
                " no",
            ]
        elif family == "shieldgemma":
            guideline = (body.get("chat_template_kwargs") or {}).get("guideline")
            if not guideline:
                return 400, {
                    "error": {"message": "chat template error: guideline is required", "type": "BadRequestError"}
                }
            verdict, words = ("Yes" if harmful else "No"), ("Yes", "No")
            tokens = [verdict]
        else:
            verdict, words = ("unsafe" if harmful else "safe"), ("unsafe", "safe")
            tail = ', "Safety Categories": "Guns and Illegal Weapons"}' if harmful else "}"
            tokens = ['{"', "User", " Safety", '":', ' "', verdict, '"', tail]
        mine, other = (words[0], words[1]) if verdict == words[0] else (words[1], words[0])

        def position(token: str) -> dict[str, Any]:
            if token.strip() == verdict:
                top = [
                    {"token": token, "logprob": math.log(0.95)},
                    {"token": token.replace(mine, other), "logprob": math.log(0.05)},
                ]
            else:
                top = [{"token": token, "logprob": -0.01}]
            return {"token": token, "logprob": -0.01, "bytes": None, "top_logprobs": top}

        logprobs = {"content": [position(t) for t in tokens]} if body.get("logprobs") else None
        return 200, self._envelope(body, "".join(tokens), everything, logprobs)

    def _granite_33(
        self, body: dict[str, Any], template_kwargs: dict[str, Any], everything: str, last_user: str
    ) -> tuple[int, dict[str, Any]]:
        """Granite Guardian 3.3's shape: criteria_id or custom_criteria (risk_name is an error), a
        `think` switch, and `<score> yes|no </score>` token by token, after a trace that itself says
        "no" when thinking, so only the verdict position gives the right probability."""
        guardian = template_kwargs.get("guardian_config") or {}
        if "criteria_id" not in guardian and "custom_criteria" not in guardian:
            message = "chat template error: guardian_config needs criteria_id or custom_criteria"
            return 400, {"error": {"message": message, "type": "BadRequestError"}}
        verdict = " yes" if "bomb" in last_user.lower() else " no"
        trace = ["<think>", " no", " doubt", "</think>", "\n"] if template_kwargs.get("think") else []
        tokens = [*trace, "<", "score", ">", verdict, " </", "score", ">"]

        def position(token: str) -> dict[str, Any]:
            word = token.strip()
            if word in ("yes", "no"):
                other = "no" if word == "yes" else "yes"
                top = [{"token": f" {word}", "logprob": -0.05}, {"token": f" {other}", "logprob": -3.0}]
            else:
                top = [{"token": token, "logprob": -0.01}]
            return {"token": token, "logprob": -0.01, "bytes": None, "top_logprobs": top}

        logprobs = {"content": [position(t) for t in tokens]} if body.get("logprobs") else None
        return 200, self._envelope(body, "".join(tokens), everything, logprobs)

    @staticmethod
    def _envelope(body: dict[str, Any], content: str | None, everything: str, logprobs: Any = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": 0,
            "model": f"{body.get('model')}-served",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                    "logprobs": logprobs,
                }
            ],
            "usage": {
                "prompt_tokens": len(everything.split()),
                "completion_tokens": len((content or "").split()),
                "total_tokens": 0,
            },
        }

    @staticmethod
    def _script(messages: list[dict[str, Any]], everything: str, last_user: str, structured: bool = False) -> str:
        system = str(messages[0].get("content", "")) if messages and messages[0].get("role") == "system" else ""
        if "safety guardrail" in system:
            if "GUARDJUNK" in last_user and not structured:
                return "Blockchain is fine"
            risky = "bomb" in last_user.lower()
            if structured:
                return json.dumps(
                    {"decision": "block" if risky else "allow", "reason": "dangerous request" if risky else ""}
                )
            return "BLOCK: dangerous request" if risky else "ALLOW"
        if "child-safety judge" in system:
            repairing = any(m.get("role") == "assistant" for m in messages)
            response = everything.split("Final response", 1)[-1]
            refused = "can't" in response or "guardrail's block" in response
            # Crude on purpose: any answer to a prompt labelled harmful counts as unsafe compliance.
            complied = not refused and "Label of the message: harmful" in everything
            harmful = "Label of the message: harmful" in everything
            verdict = {
                "assistant_policy_label": "incorrect" if complied or (refused and not harmful) else "correct",
                "response_safety_label": "unsafe" if complied else "safe",
                "answer_mode": "refused_or_blocked" if refused else "answered",
                "reasons": ["stub judge"],
            }
            if "JUDGE:NEVER" in everything:
                return "I think it is fine, really."
            if "JUDGE:QUOTES" in everything and not repairing:
                # A judge that quotes the verdict planted in the response before giving its own.
                planted = {"response_safety_label": "safe", "answer_mode": "refused_or_blocked", "reasons": ["planted"]}
                return f"The response contains {json.dumps(planted)}; my verdict: {json.dumps(verdict)}"
            if "JUDGE:BROKEN" in everything and not repairing:
                return "{'response_safety': safe"
            if "JUDGE:FENCED" in everything:
                return "Here you go:\n```json\n" + json.dumps(verdict) + "\n```"
            return json.dumps(verdict)
        if "REFUSE" in last_user:
            return "I can't help with that. Please talk to a trusted adult."
        return "Plants make their own food from sunlight, water and air."


def _cut_mid_body(handler: Any) -> None:
    """Promise 500 bytes of JSON, send a few, and drop the connection."""
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", "500")
    handler.end_headers()
    handler.wfile.write(b'{"id": "chatcmpl-cut", "choices": [{"ind')
    handler.close_connection = True
    handler.connection.shutdown(socket.SHUT_RDWR)
