"""The objects one process of a run (the controller or an xdist worker) holds while it runs: the
registered units, the models built for this run, the response cache and the engine."""

from __future__ import annotations

import time
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pytest_guardbench.providers import ChatProvider, ModelAPI
from pytest_guardbench.providers.cache import CachedProvider, CacheMode, CacheStats, ResponseCache
from pytest_guardbench.document.execution import ApiCalls, CacheCounts, Execution
from pytest_guardbench.records import CaseRecord
from pytest_guardbench.run.engine import Engine
from pytest_guardbench.run.units import Units, builtin_units

if TYPE_CHECKING:  # imported when they are made (`_run_call_processes`)
    from pytest_guardbench.providers.call_processes import CallProcesses


class ItemQueue(Protocol):
    """The xdist worker's queue of the item indices its scheduler has sent it (xdist's
    `WorkerInteractor.torun`), read under its own lock."""

    def lock(self) -> AbstractContextManager[Iterable[object]]: ...


@dataclass
class ProcessState:
    """Per-process (controller or worker) objects: the registered units, the models built for this
    run (one per distinct spec, shared between roles), the response cache and the engine."""

    units: Units = field(default_factory=builtin_units)
    engine: Engine | None = None
    tutor: ChatProvider | None = None
    cache: ResponseCache | None = None
    cache_mode: CacheMode = "off"
    cache_stats: CacheStats = field(default_factory=CacheStats)
    models: dict[str, ModelAPI] = field(default_factory=dict)  # spec json -> provider
    role_models: dict[str, ModelAPI] = field(default_factory=dict)  # role -> provider, for call counts
    submitted_all: bool = False
    # Looked up once (plugin/worker.py); None after the lookup: not an xdist worker, or xdist changed its internals.
    xdist_queue_looked_up: bool = False
    xdist_queue: ItemQueue | None = None
    prior: dict[str, CaseRecord] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)  # for --guardbench-max-duration
    call_processes: CallProcesses | None = None  # the run's, which every API model without its own shares

    def call_processes_of_run(self, size: int | None) -> CallProcesses:
        """The run's call processes, made at the first ask; they start at their first call."""
        if self.call_processes is None:
            self.call_processes = _run_call_processes(size)
        return self.call_processes

    def cached(self, provider: Any, role: str) -> Any:
        """`provider` behind the response cache, when this run has one."""
        if self.cache is None:  # only opened when --guardbench-cache is not off
            return provider
        return CachedProvider(provider, self.cache, self.cache_mode, self.cache_stats, role)

    def execution(self) -> Execution | None:
        """This process's counters: cases run and reused, the response cache's, each role's API calls."""
        if self.engine is None:
            return None
        stats = self.engine.stats
        counted: dict[str, object] = {
            "cases_run": stats.done,
            "cases_reused": stats.reused,
            "case_errors": stats.errors,
        }
        if self.cache is not None:
            counted["cache"] = CacheCounts(
                hits=self.cache_stats.hits, misses=self.cache_stats.misses, writes=self.cache_stats.writes
            )
        calls = {
            role: ApiCalls.model_validate(counts)
            for role, model in self.role_models.items()
            if (counts := model.stats())
        }
        if calls:
            counted["api_calls"] = calls
        return Execution.model_validate(counted)

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()
        for model in self.models.values():
            model.close()
        if self.call_processes is not None:  # after the models: each reads its counts from them first
            self.call_processes.close()
            self.call_processes = None
        if self.cache is not None:
            self.cache.close()


def _run_call_processes(size: int | None) -> CallProcesses:
    # Here, not at the top: importing them costs a run that makes no call in them (most runs) about 10 ms.
    from pytest_guardbench.providers.call_processes import CallProcesses

    return CallProcesses(size or 1, "api")


def start_call_processes(size: int | None) -> CallProcesses:
    """The run's call processes, started now (before the run collects, so they import the client
    while it does)."""
    call_processes = _run_call_processes(size)
    call_processes.start()
    return call_processes
