"""API calls spread over worker processes: one model's (`SpreadProvider` with processes of its own),
or every API model's of a run (`CallProcesses` shared between `SpreadProvider`s).

The official client spends one to two milliseconds of CPU on every call, under one GIL: a single
process tops out at a few hundred calls a second, whatever the server could take. With
`processes = N` each worker process runs its own `OpenAICompatProvider` (own client, connection
pool, retries and adaptive limit, `concurrency / N` calls in flight) and this process only hands
groups of calls over a pipe to the least busy worker.

API keys never cross the pipe: a worker reads the key from the environment variable named in its
settings, as the in-process provider does. Run as `python -m pytest_guardbench.providers.process_spread
READ_FD WRITE_FD` by `SpreadProvider`, never by hand.
"""

from __future__ import annotations

import concurrent.futures
import functools
import itertools
import math
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from pytest_guardbench._util.counters import add_counts
from pytest_guardbench.providers.base import (
    Classification,
    ClassifyRequest,
    Completion,
    GenerationParams,
    Message,
    ModelAPI,
    ProviderError,
)
from pytest_guardbench.providers.openai_compat import OpenAICompatProvider, load_client_library
from pytest_guardbench.providers.transport import LoopThread

PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])


@dataclass
class _Worker:
    process: subprocess.Popen[bytes]
    to_worker: Connection
    from_worker: Connection
    send_lock: threading.Lock = field(default_factory=threading.Lock)
    outstanding: int = 0  # calls handed over and not answered yet, of every model
    gone: str | None = None  # why it can take no more calls
    reader: threading.Thread | None = None


class CallProcesses:
    """Worker processes that make API calls for one or more models. Each model is registered with
    every worker (`register`), which then holds its own `OpenAICompatProvider` for it: own client,
    connection pool, retries and adaptive limit. Shared by every API model of a run, the processes
    import the client once each, whatever the number of models."""

    def __init__(self, processes: int, name: str) -> None:
        self.name = name
        self.size = max(1, processes)
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._pending: dict[int, tuple[_Worker, int, concurrent.futures.Future[Any]]] = {}
        self._models: list[dict[str, Any]] = []  # each registered model's settings, by number
        self.workers: list[_Worker] = []  # started by `start()` or the first call, never for a replay
        self._closed = False

    def start(self) -> None:
        """Start the processes now (idempotent): a run that will call starts them before it collects,
        so they import the client while it does; every model registered so far is sent to each."""
        with self._lock:
            if self.workers or self._closed:
                return
            self.workers = [self._start() for _ in range(self.size)]
            models = list(enumerate(self._models))
        for worker in self.workers:
            for number, settings in models:
                self._tell(worker, number, settings)

    def register(self, settings: dict[str, Any]) -> int:
        """A model's number in these processes; each worker builds its provider from `settings`."""
        with self._lock:
            number = len(self._models)
            self._models.append(settings)
            workers = list(self.workers)
        for worker in workers:
            self._tell(worker, number, settings)
        return number

    def _tell(self, worker: _Worker, number: int, settings: dict[str, Any]) -> None:
        if worker.gone is None:
            try:
                with worker.send_lock:
                    worker.to_worker.send((-1, "model", (number, settings)))
            except OSError:
                pass  # its reader notices the process is gone

    def live(self) -> list[_Worker]:
        self.start()
        with self._lock:
            return [w for w in self.workers if w.gone is None]

    def least_busy(self, size: int, name: str) -> _Worker:
        """The live worker with the fewest calls in hand, charged with `size` more at once: two
        threads choosing together must see each other's share."""
        self.start()
        with self._lock:
            live = [w for w in self.workers if w.gone is None]
            if not live:
                reasons = "; ".join(sorted({str(w.gone) for w in self.workers}))
                raise ProviderError(f"{name}: no call process left ({reasons})")
            worker = min(live, key=lambda w: w.outstanding)
            worker.outstanding += size
            return worker

    def send(
        self, worker: _Worker, method: str, size: int, args: tuple[Any, ...], name: str, counted: bool = False
    ) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._lock:
            if not counted:
                worker.outstanding += size
            if worker.gone is not None:
                worker.outstanding -= size
                raise ProviderError(f"{name}: call process {worker.process.pid} {worker.gone}")
            call_id = next(self._ids)
            self._pending[call_id] = (worker, size, future)
        try:
            with worker.send_lock:
                worker.to_worker.send((call_id, method, args))
        except OSError as exc:
            self._settle(call_id, "error", f"{name}: cannot reach call process {worker.process.pid}: {exc}")
        return future

    def close(self) -> None:
        with self._lock:
            self._closed = True  # nothing starts them again
            workers = list(self.workers)
        for worker in workers:
            with self._lock:
                was_live, worker.gone = worker.gone is None, worker.gone or "closed"
            if was_live:
                try:
                    with worker.send_lock:
                        worker.to_worker.send((-1, "close", ()))
                except OSError:
                    pass
        for worker in workers:
            try:
                worker.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                worker.process.kill()
                worker.process.wait()
            worker.to_worker.close()
            if worker.reader is not None:
                worker.reader.join(timeout=5)

    def _start(self) -> _Worker:
        to_read, to_write = os.pipe()  # this process → worker
        from_read, from_write = os.pipe()  # worker → this process
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_PARENT, env.get("PYTHONPATH", "")) if p)
        process = subprocess.Popen(
            [sys.executable, "-m", "pytest_guardbench.providers.process_spread", str(to_read), str(from_write)],
            pass_fds=(to_read, from_write),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            env=env,
        )
        os.close(to_read)
        os.close(from_write)
        worker = _Worker(process, Connection(to_write, readable=False), Connection(from_read, writable=False))
        worker.reader = threading.Thread(
            target=self._read, args=(worker,), name=f"guardbench-{self.name}-spread", daemon=True
        )
        worker.reader.start()
        return worker

    def _read(self, worker: _Worker) -> None:
        """Answers from one worker, until its pipe closes; then every call it still held fails."""
        while True:
            try:
                call_id, status, value = worker.from_worker.recv()
            except (EOFError, OSError):
                break
            self._settle(call_id, status, value)
        code = worker.process.wait()
        with self._lock:
            if worker.gone is None:
                worker.gone = f"exited with code {code}"
            orphans = [call_id for call_id, (owner, _, _) in self._pending.items() if owner is worker]
        for call_id in orphans:
            self._settle(
                call_id, "error", f"{self.name}: call process {worker.process.pid} {worker.gone} before answering"
            )
        worker.from_worker.close()

    def _settle(self, call_id: int, status: str, value: Any) -> None:
        with self._lock:
            entry = self._pending.pop(call_id, None)
            if entry is None:
                return
            worker, size, future = entry
            worker.outstanding -= size
        if status == "ok":
            future.set_result(value)
        else:
            future.set_exception(ProviderError(str(value)))


class SpreadProvider(ModelAPI):
    """The ChatProvider / classifier interface of `OpenAICompatProvider`, its calls made by worker
    processes: `processes` of its own, or the run's shared `CallProcesses` (`pool`). `settings` are
    OpenAICompatProvider's keyword arguments; `concurrency` is the whole model's limit and is split
    between the workers."""

    def __init__(self, settings: dict[str, Any], processes: int, pool: CallProcesses | None = None) -> None:
        # Built here too (no client, no connection) so a missing key fails in this process, with the
        # same name, repr and cache identity as a single-process run.
        self._description = OpenAICompatProvider(**settings)
        self.name = self._description.name
        self.model = self._description.model
        self._owns_pool = pool is None
        self._pool = pool if pool is not None else CallProcesses(processes, self.name)
        self.processes = self._pool.size
        self._per_worker = math.ceil(int(settings.get("concurrency", 8)) / self.processes)
        self._number = self._pool.register(dict(settings, concurrency=self._per_worker))
        self._handed: dict[int, int] = {}
        self._last_stats: dict[int, dict[str, Any]] = {}

    def __repr__(self) -> str:
        return f"{self._description!r} in {self.processes} processes"

    @property
    def cache_identity(self) -> str:
        return self._description.cache_identity

    # -- the provider interface ------------------------------------------------------------------
    def generate(
        self, conversations: Sequence[list[Message]], params: GenerationParams, seeds: Sequence[int | None]
    ) -> list[Completion]:
        parts = self._parts(len(conversations))
        return self._gather("generate", [(list(conversations[a:b]), params, list(seeds[a:b])) for a, b in parts], parts)

    def classify(self, request: ClassifyRequest) -> list[Classification]:
        parts = self._parts(len(request.conversations))
        return self._gather(
            "classify", [(request.for_conversations(request.conversations[a:b]),) for a, b in parts], parts
        )

    def moderate(self, texts: Sequence[str]) -> list[Any]:
        parts = self._parts(len(texts))
        return self._gather("moderate", [(list(texts[a:b]),) for a, b in parts], parts)

    def stats(self) -> dict[str, Any]:
        """The workers' counts added up (`lowest_concurrency` too: the lowest limits reached, summed);
        a worker that is gone counts with what it last reported."""
        self._refresh_stats()
        workers = self._pool.workers
        return _merge_stats(
            [self._last_stats.get(id(w), {}) for w in workers], [self._handed.get(id(w), 0) for w in workers]
        )

    def _refresh_stats(self) -> None:
        asked = []
        for worker in [w for w in self._pool.workers if w.gone is None]:  # a pool never started has no counts
            try:
                asked.append((worker, self._pool.send(worker, "stats", 0, (self._number,), self.name)))
            except ProviderError:
                pass
        for worker, answer in asked:
            try:
                self._last_stats[id(worker)] = answer.result()
            except ProviderError:
                pass

    def close(self) -> None:
        try:
            self._refresh_stats()
        except ProviderError:
            pass
        if self._owns_pool:
            self._pool.close()

    # -- plumbing --------------------------------------------------------------------------------
    def _parts(self, size: int) -> list[tuple[int, int]]:
        """Slices of one call: whole when one worker can hold it all in flight (the engine's small
        groups), else one share per live worker (a judge check or rejudge sending everything)."""
        live = len(self._pool.live())
        if size <= self._per_worker or live <= 1:
            return [(0, size)]
        share = math.ceil(size / live)
        return [(start, min(size, start + share)) for start in range(0, size, share)]

    def _gather(self, method: str, args: list[tuple[Any, ...]], parts: list[tuple[int, int]]) -> list[Any]:
        futures = []
        for part_args, (start, end) in zip(args, parts, strict=True):
            worker = self._pool.least_busy(end - start, self.name)
            self._handed[id(worker)] = self._handed.get(id(worker), 0) + end - start
            futures.append(
                self._pool.send(worker, method, end - start, (self._number, *part_args), self.name, counted=True)
            )
        return [answer for future in futures for answer in future.result()]


# What a spread model reports of its workers' counters, each 0 when no worker counted it.
_SPREAD_COUNTS = ("calls", "retries", "rate_limited", "lowest_concurrency")


def _merge_stats(per_worker: list[dict[str, Any]], handed: list[int]) -> dict[str, Any]:
    """One model's counts from its workers' own; `handed_per_process` is how the calls were shared."""
    counted = [{k: v for k, v in stats.items() if k in _SPREAD_COUNTS or k == "endpoints"} for stats in per_worker]
    # Each worker holds its share of the model's concurrency, so their lowest limits add up.
    merged = add_counts([dict.fromkeys(_SPREAD_COUNTS, 0), *counted], shared_limit=True)
    merged["processes"] = len(handed)
    # Keyed, not a list, so per-process counts add up across xdist workers like every other count.
    merged["handed_per_process"] = {f"p{i}": number for i, number in enumerate(handed, start=1)}
    return merged


# -- the worker process ----------------------------------------------------------------------------
def _serve(requests: Connection, answers: Connection) -> None:
    """Read calls from the pipe and start each on its model's provider's own event loop; each answer
    is sent from that loop when its calls are done, so no thread sits waiting per group of calls."""
    load_client_library()  # now, while the test process still collects, not at the first call
    providers: dict[int, OpenAICompatProvider] = {}
    # One event loop for every model of this process: a loop thread per model would hand the GIL
    # between them on every call (bench/bench_fixed_costs.py).
    loop = LoopThread("call-process")
    send_lock, running_lock = threading.Lock(), threading.Lock()
    running: set[concurrent.futures.Future[Any]] = set()

    def send(reply: tuple[int, str, Any]) -> None:
        with send_lock:
            answers.send(reply)

    def answered(call_id: int, name: str, done: concurrent.futures.Future[Any]) -> None:
        with running_lock:
            running.discard(done)
        try:
            send((call_id, "ok", done.result()))
        except ProviderError as exc:
            send((call_id, "error", str(exc)))
        except Exception as exc:  # noqa: BLE001 - the caller gets the failure as a provider error
            send((call_id, "error", f"{name}: {type(exc).__name__}: {exc}"))

    try:
        while True:
            try:
                call_id, method, args = requests.recv()
            except EOFError:  # the parent is gone
                break
            if method == "close":
                break
            if method == "model":
                number, settings = args
                providers[number] = OpenAICompatProvider(**settings, loop=loop)
                continue
            provider = providers.get(args[0])
            if provider is None:
                send((call_id, "error", f"no model {args[0]!r} in this call process"))
            elif method == "stats":
                send((call_id, "ok", provider.stats()))
            elif method in ("generate", "classify", "moderate"):
                call: Callable[..., Coroutine[Any, Any, Any]] = getattr(provider, f"{method}_async")
                started = provider.start(call(*args[1:]))
                with running_lock:
                    running.add(started)
                started.add_done_callback(functools.partial(answered, call_id, provider.name))
            else:
                send((call_id, "error", f"unknown call {method!r}"))
    finally:
        with running_lock:
            unfinished = list(running)
        concurrent.futures.wait(unfinished)
        for provider in providers.values():
            provider.close()
        loop.stop()
        answers.close()


if __name__ == "__main__":
    _serve(Connection(int(sys.argv[1]), writable=False), Connection(int(sys.argv[2]), readable=False))
    # Every answer is sent and every client closed: the interpreter's teardown of the client
    # library's modules (a tenth of a second) is not worth the run's waiting for it.
    os._exit(0)
