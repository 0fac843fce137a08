"""Start the test suite's loopback OpenAI-compatible server in a child process (so it does not
share a GIL with the code being measured) and hand back its base URL."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def loopback_server(latency_s: float) -> Iterator[str]:
    code = (
        "import sys, time; sys.path.insert(0, %r)\n"
        "from tests.openai_stub import OpenAIStub\n"
        "stub = OpenAIStub(latency_s=%r)\n"
        "print(stub.base_url, flush=True)\n"
        "sys.stdin.read()\n"
    ) % (str(ROOT), latency_s)
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        yield child.stdout.readline().strip()
    finally:
        child.kill()
        child.wait()
