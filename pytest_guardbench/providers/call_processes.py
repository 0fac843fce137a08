"""Call processes: worker processes that make API models' calls, for one model (an alias's
`processes = N`) or for every API model of a run (`--guardbench-api-processes N`). `CallProcesses`
starts them, hands them calls and gets their answers; providers/call_process_provider.py is the
model interface over them, providers/call_messages.py what crosses the pipe, and
providers/call_process_main.py what a call process runs.

The official client spends one to two milliseconds of CPU on every call, under one GIL: a single
process tops out at a few hundred calls a second, whatever the server could take. In call processes
each model has an `OpenAICompatProvider` per process (own client, connection pool, retries and
adaptive limit, `concurrency / N` calls in flight) and this process only hands groups of calls over
a pipe to the least busy one. API keys never cross the pipe: a call process reads the key from the
environment variable named in the model's settings, as the in-process provider does.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import os
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from pytest_guardbench.providers.base import ProviderError, ProviderSettings
from pytest_guardbench.providers.call_messages import (
    AddModel,
    Answer,
    Call,
    Close,
    Failure,
    FromCallProcess,
    Request,
    ToCallProcess,
)

PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])
CALL_PROCESS_MODULE = "pytest_guardbench.providers.call_process_main"


@dataclass
class CallProcess:
    """One call process: its pipes, and the calls it holds."""

    popen: subprocess.Popen[bytes]
    to_process: Connection
    from_process: Connection
    send_lock: threading.Lock = field(default_factory=threading.Lock)
    outstanding: int = 0  # calls handed over and not answered yet, of every model
    gone: str | None = None  # why it can take no more calls
    reader: threading.Thread | None = None

    def send(self, message: ToCallProcess) -> None:
        with self.send_lock:
            self.to_process.send(message)


class CallProcesses:
    """Call processes for one or more models. Each model is registered with every call process
    (`register`), which then holds its own `OpenAICompatProvider` for it: own client, connection
    pool, retries and adaptive limit. Shared by every API model of a run, the processes import the
    client once each, whatever the number of models."""

    def __init__(self, size: int, name: str) -> None:
        self.name = name
        self.size = max(1, size)
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._pending: dict[int, tuple[CallProcess, int, concurrent.futures.Future[Any]]] = {}
        self._models: list[ProviderSettings] = []  # each registered model's settings, by number
        self.processes: list[CallProcess] = []  # started by `start()` or the first call, never for a replay
        self._closed = False

    def start(self) -> None:
        """Start the processes now (idempotent): a run that will call starts them before it collects,
        so they import the client while it does; every model registered so far is sent to each."""
        with self._lock:
            if self.processes or self._closed:
                return
            self.processes = [self._start() for _ in range(self.size)]
            models = list(enumerate(self._models))
        for process in self.processes:
            for number, settings in models:
                self._tell(process, AddModel(number, settings))

    def register(self, settings: ProviderSettings) -> int:
        """A model's number in these processes; each process builds its provider from `settings`."""
        with self._lock:
            number = len(self._models)
            self._models.append(settings)
            processes = list(self.processes)
        for process in processes:
            self._tell(process, AddModel(number, settings))
        return number

    def _tell(self, process: CallProcess, message: AddModel | Close) -> None:
        if process.gone is None:
            try:
                process.send(message)
            except OSError:
                pass  # its reader notices the process is gone

    def live(self) -> list[CallProcess]:
        self.start()
        with self._lock:
            return [p for p in self.processes if p.gone is None]

    def least_busy(self, size: int, name: str) -> CallProcess:
        """The live process with the fewest calls in hand, charged with `size` more at once: two
        threads choosing together must see each other's share."""
        self.start()
        with self._lock:
            live = [p for p in self.processes if p.gone is None]
            if not live:
                reasons = "; ".join(sorted({str(p.gone) for p in self.processes}))
                raise ProviderError(f"{name}: no call process left ({reasons})")
            process = min(live, key=lambda p: p.outstanding)
            process.outstanding += size
            return process

    def send(
        self, process: CallProcess, call: Call, size: int, name: str, counted: bool = False
    ) -> concurrent.futures.Future[Any]:
        """Hand `call` (`size` calls of model `name`) to `process`; the future holds its answer.
        `counted`: `least_busy` has charged the process with them already."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._lock:
            if not counted:
                process.outstanding += size
            if process.gone is not None:
                process.outstanding -= size
                raise ProviderError(f"{name}: call process {process.popen.pid} {process.gone}")
            call_id = next(self._ids)
            self._pending[call_id] = (process, size, future)
        try:
            process.send(Request(call_id, call))
        except OSError as exc:
            self._settle(Failure(call_id, f"{name}: cannot reach call process {process.popen.pid}: {exc}"))
        return future

    def close(self) -> None:
        with self._lock:
            self._closed = True  # nothing starts them again
            processes = list(self.processes)
        for process in processes:
            with self._lock:
                was_live, process.gone = process.gone is None, process.gone or "closed"
            if was_live:
                try:
                    process.send(Close())
                except OSError:
                    pass
        for process in processes:
            try:
                process.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.popen.kill()
                process.popen.wait()
            process.to_process.close()
            if process.reader is not None:
                process.reader.join(timeout=5)

    def _start(self) -> CallProcess:
        to_read, to_write = os.pipe()  # this process → call process
        from_read, from_write = os.pipe()  # call process → this process
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_PARENT, env.get("PYTHONPATH", "")) if p)
        popen = subprocess.Popen(
            [sys.executable, "-m", CALL_PROCESS_MODULE, str(to_read), str(from_write)],
            pass_fds=(to_read, from_write),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            env=env,
        )
        os.close(to_read)
        os.close(from_write)
        process = CallProcess(popen, Connection(to_write, readable=False), Connection(from_read, writable=False))
        process.reader = threading.Thread(
            target=self._read, args=(process,), name=f"guardbench-{self.name}-calls", daemon=True
        )
        process.reader.start()
        return process

    def _read(self, process: CallProcess) -> None:
        """Answers from one call process, until its pipe closes; then every call it still held fails."""
        while True:
            try:
                answer: FromCallProcess = process.from_process.recv()
            except (EOFError, OSError):
                break
            self._settle(answer)
        code = process.popen.wait()
        with self._lock:
            if process.gone is None:
                process.gone = f"exited with code {code}"
            orphans = [call_id for call_id, (owner, _, _) in self._pending.items() if owner is process]
        for call_id in orphans:
            self._settle(
                Failure(call_id, f"{self.name}: call process {process.popen.pid} {process.gone} before answering")
            )
        process.from_process.close()

    def _settle(self, answer: FromCallProcess) -> None:
        with self._lock:
            entry = self._pending.pop(answer.call_id, None)
            if entry is None:
                return
            process, size, future = entry
            process.outstanding -= size
        if isinstance(answer, Answer):
            future.set_result(answer.value)
        else:
            future.set_exception(ProviderError(answer.reason))
