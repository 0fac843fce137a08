"""What one call process runs (providers/call_processes.py): it reads messages from the run over a
pipe (providers/call_messages.py), builds a provider per model it is told of, starts each call on
that provider's event loop and sends each answer back. Run as `python -m
pytest_guardbench.providers.call_process_main READ_FD WRITE_FD` by `CallProcesses`, never by hand.
"""

from __future__ import annotations

import concurrent.futures
import functools
import os
import sys
import threading
from collections.abc import Coroutine
from multiprocessing.connection import Connection

from pytest_guardbench.providers.base import ProviderError
from pytest_guardbench.providers.call_messages import (
    AddModel,
    Answer,
    Classify,
    Close,
    CountCalls,
    Failure,
    FromCallProcess,
    Generate,
    Moderate,
    Request,
    ToCallProcess,
)
from pytest_guardbench.providers.openai_compat import OpenAICompatProvider
from pytest_guardbench.providers.transport import load_client_library
from pytest_guardbench.providers.transport import LoopThread


class _Served:
    """The call process's models and the calls still running on their loop."""

    def __init__(self, answers: Connection) -> None:
        self.providers: dict[int, OpenAICompatProvider] = {}
        # One event loop for every model of this process: a loop thread per model would hand the GIL
        # between them on every call (bench/bench_fixed_costs.py).
        self.loop = LoopThread("call-process")
        self._answers = answers
        self._send_lock, self._running_lock = threading.Lock(), threading.Lock()
        self._running: set[concurrent.futures.Future[object]] = set()

    def send(self, answer: FromCallProcess) -> None:
        with self._send_lock:
            self._answers.send(answer)

    def add(self, message: AddModel) -> None:
        self.providers[message.model] = OpenAICompatProvider(**message.settings, loop=self.loop)

    def call(self, request: Request) -> None:
        """Start the call on its model's loop; its answer is sent from there when it is done, so no
        thread sits waiting per group of calls."""
        provider = self.providers.get(request.call.model)
        if provider is None:
            self.send(Failure(request.call_id, f"no model {request.call.model!r} in this call process"))
            return
        if isinstance(request.call, CountCalls):
            self.send(Answer(request.call_id, provider.stats()))
            return
        started = provider.start(_coroutine(provider, request.call))
        with self._running_lock:
            self._running.add(started)
        started.add_done_callback(functools.partial(self._answered, request.call_id, provider.name))

    def _answered(self, call_id: int, name: str, done: concurrent.futures.Future[object]) -> None:
        with self._running_lock:
            self._running.discard(done)
        try:
            self.send(Answer(call_id, done.result()))
        except ProviderError as exc:
            self.send(Failure(call_id, str(exc)))
        except Exception as exc:  # noqa: BLE001 - the caller gets the failure as a provider error
            self.send(Failure(call_id, f"{name}: {type(exc).__name__}: {exc}"))

    def finish(self) -> None:
        """Wait for the calls in flight (their answers are sent), then close every client."""
        with self._running_lock:
            unfinished = list(self._running)
        concurrent.futures.wait(unfinished)
        for provider in self.providers.values():
            provider.close()
        self.loop.stop()
        self._answers.close()


def _coroutine(provider: OpenAICompatProvider, call: Generate | Classify | Moderate) -> Coroutine[object, None, object]:
    match call:
        case Generate():
            return provider.generate_async(call.conversations, call.params, call.seeds)
        case Classify():
            return provider.classify_async(call.request)
        case Moderate():
            return provider.moderate_async(call.texts)


def serve(requests: Connection, answers: Connection) -> None:
    """Serve the run's messages until it sends `Close` or its end of the pipe closes."""
    load_client_library()  # now, while the test process still collects, not at the first call
    served = _Served(answers)
    try:
        while True:
            try:
                message: ToCallProcess = requests.recv()
            except EOFError:  # the run is gone
                break
            match message:
                case Close():
                    break
                case AddModel():
                    served.add(message)
                case Request():
                    served.call(message)
    finally:
        served.finish()


if __name__ == "__main__":
    serve(Connection(int(sys.argv[1]), writable=False), Connection(int(sys.argv[2]), readable=False))
    # Every answer is sent and every client closed: the interpreter's teardown of the client
    # library's modules (a tenth of a second) is not worth the run's waiting for it.
    os._exit(0)
