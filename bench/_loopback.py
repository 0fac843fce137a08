"""Start the test suite's loopback OpenAI-compatible server in a child process (so it does not
share a GIL with the code being measured) and hand back its base URL.

`timed_loopback_server` also keeps a timeline of the answers it gave: when each call arrived and
when it was answered (on CLOCK_MONOTONIC, which every process on a Linux machine shares), and
what kind of call it was, so a benchmark can split a whole command into the time before the first
case call, the calls themselves, and the time after the last answer."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

_SERVE = """
import json, sys, threading, time
sys.path.insert(0, {root!r})
from tests.openai_stub import OpenAIStub
from pytest_guardbench.run.preflight import PREFLIGHT_PROMPT

stub = OpenAIStub(latency_s={latency!r})
timeline = []
lock = threading.Lock()
respond = stub._respond


def timed(handler, body):
    # Called once the stub's latency has passed: the call arrived `latency` before.
    started = time.monotonic()
    respond(handler, body)
    texts = [str(m.get("content", "")) for m in body.get("messages") or []]
    kind = "preflight" if PREFLIGHT_PROMPT in texts else "case"
    if any("Two plus two is four." in t for t in texts):
        kind = "judge probe"
    with lock:
        timeline.append((started - {latency!r}, time.monotonic(), kind))


stub._respond = timed
print(stub.base_url, flush=True)
for line in sys.stdin:
    with lock:
        taken = list(timeline)
        timeline.clear()
    print(json.dumps(taken), flush=True)
"""


@dataclass(frozen=True)
class Call:
    arrived: float
    answered: float
    kind: str  # "preflight" (the one-token check of each model), "judge probe" or "case"


class TimedServer:
    def __init__(self, child: subprocess.Popen[str], url: str) -> None:
        self._child = child
        self.url = url

    def calls(self) -> list[Call]:
        """The calls answered since the last time this was asked."""
        assert self._child.stdin is not None and self._child.stdout is not None
        self._child.stdin.write("\n")
        self._child.stdin.flush()
        rows: list[Any] = json.loads(self._child.stdout.readline())
        return [Call(*row) for row in rows]


@contextmanager
def timed_loopback_server(latency_s: float) -> Iterator[TimedServer]:
    child = subprocess.Popen(
        [sys.executable, "-c", _SERVE.format(root=str(ROOT), latency=latency_s)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        yield TimedServer(child, child.stdout.readline().strip())
    finally:
        child.kill()
        child.wait()


@contextmanager
def loopback_server(latency_s: float) -> Iterator[str]:
    with timed_loopback_server(latency_s) as server:
        yield server.url
