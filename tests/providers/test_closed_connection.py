"""A server that closes the connection without answering is reported as that, not as a timeout: the
real `openai` client against a loopback socket that reads the request and hangs up."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from pytest_guardbench.providers import GenerationParams, ProviderError, ProviderOptions, chat_provider_for
from pytest_guardbench.settings.model_specs import parse_model_spec


@pytest.fixture
def hangs_up() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.recv(65536)
                conn.shutdown(socket.SHUT_RDWR)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(timeout=5)
    server.close()


def test_a_connection_closed_without_an_answer_is_not_called_a_timeout(hangs_up, tmp_path):
    spec = parse_model_spec(f"vllm:tutor@http://127.0.0.1:{hangs_up}/v1", {})
    assert spec is not None
    provider = chat_provider_for(spec, ProviderOptions(model_cache=tmp_path))
    try:
        with pytest.raises(ProviderError) as raised:
            provider.generate([[{"role": "user", "content": "hi"}]], GenerationParams(), [None])
    finally:
        provider.close()
    message = str(raised.value)
    assert "closed the connection without a whole answer" in message and "timed out" not in message
