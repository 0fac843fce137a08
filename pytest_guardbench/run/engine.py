"""Runs the pipelines of many cases at once on an asyncio loop in a background thread.

Each case is a coroutine that walks guard → router → tutor → judge. A stage gathers the drafts
waiting for it into micro-batches (`StageLimits.batch`) and runs up to `StageLimits.in_flight` of
them at a time in worker threads, so a local model sees full batches while API calls stay
concurrent, and different cases sit in different stages at the same moment. Tests ask for their own
case with `result()` and wait only for it.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Generic, TypeVar

from pytest_guardbench.run.draft import Draft, record_from_draft
from pytest_guardbench.run.stages import Stack, StageLimits
from pytest_guardbench.run.pipeline import (
    attacker_stage,
    guard_stage,
    judge_stage,
    preflight_error,
    next_step,
    refuse,
    tutor_stage,
    walk_from_cache,
)
from pytest_guardbench.providers.base import CacheMiss
from pytest_guardbench.records import Case, CaseRecord, PipelineError, PipelineStage
from pytest_guardbench.run.attacker import Attacker

if TYPE_CHECKING:
    import asyncio

_T = TypeVar("_T")


def _asyncio() -> ModuleType:
    """The asyncio module, imported when the engine's loop is first needed: a run whose every case is
    answered from the response cache never starts it (nor pays for the import)."""
    import asyncio

    return asyncio


class _Once(Generic[_T]):
    """Thread-safe lazy value: the tutor (or attacker) is loaded by whichever stage thread needs it first."""

    def __init__(self, factory: Callable[[], _T]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._value: _T | None = None

    def __call__(self) -> _T:
        with self._lock:
            if self._value is None:
                self._value = self._factory()
            return self._value


class _Stage:
    """Collects drafts and runs them in micro-batches, at most `in_flight` batches at a time."""

    def __init__(
        self, name: PipelineStage, run: Callable[[list[Draft]], None], limits: StageLimits, engine: Engine
    ) -> None:
        self.name = name
        self._run = run
        self._limits = limits
        self._engine = engine
        self._pending: list[tuple[Draft, asyncio.Future[None]]] = []
        self._running = 0
        self._timer: asyncio.TimerHandle | None = None

    async def through(self, draft: Draft) -> None:
        future: asyncio.Future[None] = _asyncio().get_running_loop().create_future()
        self._pending.append((draft, future))
        self._pump(force=False)
        await future

    def _pump(self, force: bool) -> None:
        loop = _asyncio().get_running_loop()
        while self._pending and self._running < self._limits.in_flight and not self._engine.closing:
            if len(self._pending) < self._limits.batch and not force:
                if self._timer is None:
                    self._timer = loop.call_later(self._limits.wait_s, self._on_timer)
                return
            batch, self._pending = self._pending[: self._limits.batch], self._pending[self._limits.batch :]
            self._running += 1
            loop.create_task(self._launch(batch))

    def _on_timer(self) -> None:
        self._timer = None
        self._pump(force=True)

    async def _launch(self, batch: list[tuple[Draft, asyncio.Future[None]]]) -> None:
        drafts = [draft for draft, _ in batch]
        try:
            await _asyncio().get_running_loop().run_in_executor(self._engine.executor, self._run, drafts)
        except BaseException as exc:  # noqa: BLE001 - a stage bug must still finish its cases
            for draft in drafts:
                if draft.error is None:
                    draft.error = PipelineError(stage=self.name, message=f"{type(exc).__name__}: {exc}")
        finally:
            self._running -= 1
        for _, future in batch:
            if not future.done():
                future.set_result(None)
        self._pump(force=True)


@dataclass
class EngineStats:
    done: int = 0
    errors: int = 0
    reused: int = 0


class Engine:
    """One per process. `submit` schedules cases (idempotent), `result` waits for one case.

    `prior` holds finished records of a resumed run: those cases are answered from it and never
    reach a model."""

    def __init__(self, stack: Stack, prior: Mapping[str, CaseRecord] | None = None) -> None:
        self.stack = stack
        self.closing = False
        self.stats = EngineStats()
        self._prior = dict(prior or {})
        self._futures: dict[str, concurrent.futures.Future[CaseRecord]] = {}
        self._lock = threading.Lock()
        limits = stack.limits
        tutor = self._tutor = _Once(stack.tutor)
        attacker: _Once[Attacker] | None = _Once(stack.attacker) if stack.attacker is not None else None
        self._attacker = attacker
        attacker_limits = limits.get("attacker", limits["tutor"])
        self._stages: dict[PipelineStage, _Stage] = {
            "attacker": _Stage(
                "attacker", lambda drafts: attacker_stage(drafts, stack, attacker), attacker_limits, self
            ),
            "guard": _Stage("guard", lambda drafts: guard_stage(drafts, stack), limits["guard"], self),
            "tutor": _Stage("tutor", lambda drafts: tutor_stage(drafts, stack, tutor), limits["tutor"], self),
            "judge": _Stage("judge", lambda drafts: judge_stage(drafts, stack), limits["judge"], self),
        }
        self._workers = sum(limit.in_flight for limit in limits.values()) + 1
        self._workers += attacker_limits.in_flight if "attacker" not in limits else 0
        # The loop, its thread and the stage threads start with the first case that needs a model
        # (`_started_loop`): a case answered from the response cache is finished without them.
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._preflight: asyncio.Future[str | None] | None = None
        self._preflight_passed = False  # set when the preflight was answered from the cache

    @property
    def executor(self) -> concurrent.futures.ThreadPoolExecutor:
        """The stage threads (started with the loop)."""
        assert self._executor is not None, "the stage threads start with the loop"
        return self._executor

    def _started_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=self._workers, thread_name_prefix="guardbench-stage"
                )
                self._loop = _asyncio().new_event_loop()
                self._thread = threading.Thread(target=self._loop.run_forever, name="guardbench-engine", daemon=True)
                self._thread.start()
            return self._loop

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def submit(self, cases: Iterable[Case]) -> None:
        fresh: list[tuple[Draft, concurrent.futures.Future[CaseRecord]]] = []
        with self._lock:
            for case in cases:
                if case.case_id in self._futures or case.case_id in self._prior:
                    continue
                future: concurrent.futures.Future[CaseRecord] = concurrent.futures.Future()
                self._futures[case.case_id] = future
                fresh.append((Draft(case), future))
        cached_only = self.stack.cached_only
        if fresh and cached_only is not None:
            fresh = self._complete_from_cache(fresh, cached_only)
        if fresh:
            self._started_loop().call_soon_threadsafe(self._schedule, fresh)

    def _complete_from_cache(
        self,
        fresh: list[tuple[Draft, concurrent.futures.Future[CaseRecord]]],
        cached_only: Callable[[], AbstractContextManager[None]],
    ) -> list[tuple[Draft, concurrent.futures.Future[CaseRecord]]]:
        """Finish here, in one pass per stage and without threads, every case whose calls are all in
        the response cache; the rest go on from the stage that missed. A warm-cache run then costs
        little more than pytest itself: stage threads handing the GIL back and forth with the test
        loop cost more than the cached work (bench/bench_warm_cache.py)."""
        if self.stack.preflight_judge and not self._preflight_passed:
            try:
                with cached_only():
                    problem = preflight_error(self.stack.judge)
            except CacheMiss:
                return fresh
            if problem is not None:
                return fresh  # the normal path fails every case with the same message
            self._preflight_passed = True
        walk_from_cache([draft for draft, _ in fresh], self.stack, self._tutor, self._attacker)
        pending = []
        for draft, future in fresh:
            if draft.missed_cache:
                draft.missed_cache = False
                pending.append((draft, future))
            else:
                self._settle(record_from_draft(draft), future)
        return pending

    def _settle(self, record: CaseRecord, future: concurrent.futures.Future[CaseRecord]) -> None:
        if record.judge is not None:
            record = record.model_copy(update={"judge_id": self.stack.judge_id})
        with self._lock:
            self.stats.done += 1
            self.stats.errors += record.error is not None
        future.set_result(record)

    def result(self, case: Case, waiting: Callable[[float], None] | None = None, every_s: float = 30.0) -> CaseRecord:
        """This case's record, once; asking again for the same case runs it again (reruns).
        `waiting(seconds)` is called every `every_s` seconds while the record is not ready yet."""
        with self._lock:
            prior = self._prior.pop(case.case_id, None)
        if prior is not None:
            self.stats.reused += 1
            return prior
        self.submit([case])
        with self._lock:
            future = self._futures[case.case_id]
        started = time.monotonic()
        while True:
            try:
                record = future.result(timeout=every_s if waiting is not None and every_s > 0 else None)
                break
            except concurrent.futures.TimeoutError:
                waiting(time.monotonic() - started)  # type: ignore[misc]
        with self._lock:
            self._futures.pop(case.case_id, None)
        return record

    def finished(self, cases: Iterable[Case | None]) -> list[CaseRecord]:
        """The records of `cases`, in their order, for as long as each is finished and not yet taken
        by `result` (a resumed case's included), without taking them: what the run folder may write
        ahead of the tests that will ask for them. Stops at the first case that is not."""
        found: list[CaseRecord] = []
        with self._lock:
            for case in cases:
                if case is None:
                    break
                record = self._prior.get(case.case_id)
                if record is None:
                    future = self._futures.get(case.case_id)
                    if future is None or not future.done() or future.exception() is not None:
                        break
                    record = future.result()
                found.append(record)
        return found

    def close(self) -> None:
        """Stop scheduling; batches already in a model finish in their threads."""
        self.closing = True
        with self._lock:
            loop, thread, executor = self._loop, self._thread, self._executor
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=5)
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)

    # -- on the loop ----------------------------------------------------------------------------
    def _schedule(self, fresh: Sequence[tuple[Draft, concurrent.futures.Future[CaseRecord]]]) -> None:
        loop = _asyncio().get_running_loop()
        for draft, future in fresh:
            loop.create_task(self._case(draft, future))

    async def _checked_judge(self) -> str | None:
        if not self.stack.preflight_judge or self._preflight_passed:
            return None
        if self._preflight is None:
            asyncio = _asyncio()
            self._preflight = asyncio.ensure_future(
                asyncio.get_running_loop().run_in_executor(self.executor, preflight_error, self.stack.judge)
            )
        return await self._preflight

    async def _case(self, draft: Draft, future: concurrent.futures.Future[CaseRecord]) -> None:
        try:
            problem = await self._checked_judge()
            if problem is not None:
                draft.error = PipelineError(stage="judge", message=problem)
            else:
                await self._walk(draft)
            record = record_from_draft(draft)
        except BaseException as exc:  # noqa: BLE001 - one record per case, whatever happened
            record = record_from_draft(
                Draft(draft.case, error=PipelineError(stage="tutor", message=f"engine: {type(exc).__name__}: {exc}"))
            )
        self._settle(record, future)

    async def _walk(self, draft: Draft) -> None:
        """The stages this draft still needs (one finished from the cache may have done some)."""
        previous: tuple[str, int, int] | None = None
        while (step := next_step(draft, self.stack)) is not None:
            # A stage that gave neither a result nor an error: never loop on it. A conversation comes
            # back to the same stage, but one turn further.
            here = (step, draft.depth, len(draft.done))
            if here == previous:
                stage: PipelineStage = "tutor" if step == "refuse" else step
                draft.error = PipelineError(stage=stage, message=f"the {step} stage finished without a result")
                return
            if step == "refuse":
                refuse(draft, self.stack)
            else:
                await self._stages[step].through(draft)
            previous = here


def run_cases(cases: Sequence[Case], stack: Stack) -> list[CaseRecord]:
    """Run every case through the stack on a private engine; one record per case, in order."""
    if not cases:
        return []
    with Engine(stack) as engine:
        engine.submit(cases)
        return [engine.result(case) for case in cases]
