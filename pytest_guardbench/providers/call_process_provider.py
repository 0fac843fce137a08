"""The model interface over call processes (providers/call_processes.py): the ChatProvider and
classifier calls of `OpenAICompatProvider`, each group of calls made by the least busy call process."""

from __future__ import annotations

from pytest_guardbench._util.counters import Counts, add_counts

import math
from collections.abc import Sequence
from typing import Any

from pytest_guardbench.providers.base import (
    Classification,
    ClassifyRequest,
    Completion,
    GenerationParams,
    Message,
    ModelAPI,
    ProviderError,
    ProviderSettings,
)
from pytest_guardbench.providers.call_messages import Call, Classify, CountCalls, Generate, Moderate
from pytest_guardbench.providers.call_processes import CallProcesses
from pytest_guardbench.providers.openai_compat import OpenAICompatProvider


class CallProcessProvider(ModelAPI):
    """The ChatProvider / classifier interface of `OpenAICompatProvider`, its calls made in call
    processes: `size` of its own, or the run's (`call_processes`). `settings` are
    OpenAICompatProvider's keyword arguments; `concurrency` is the whole model's limit and is split
    between the processes."""

    def __init__(self, settings: ProviderSettings, size: int, call_processes: CallProcesses | None = None) -> None:
        # Built here too (no client, no connection) so a missing key fails in this process, with the
        # same name, repr and cache identity as a single-process run.
        self._description = OpenAICompatProvider(**settings)
        self.name = self._description.name
        self.model = self._description.model
        self._owns_call_processes = call_processes is None
        self._call_processes = call_processes if call_processes is not None else CallProcesses(size, self.name)
        self._per_process = math.ceil(int(settings.get("concurrency", 8)) / self._call_processes.size)
        self._number = self._call_processes.register({**settings, "concurrency": self._per_process})
        self._handed: dict[int, int] = {}
        self._last_stats: dict[int, Counts] = {}

    def __repr__(self) -> str:
        return f"{self._description!r} in {self._call_processes.size} processes"

    @property
    def cache_identity(self) -> str:
        return self._description.cache_identity

    # -- the provider interface ------------------------------------------------------------------
    def generate(
        self, conversations: Sequence[list[Message]], params: GenerationParams, seeds: Sequence[int | None]
    ) -> list[Completion]:
        parts = self._parts(len(conversations))
        calls = [Generate(self._number, list(conversations[a:b]), params, list(seeds[a:b])) for a, b in parts]
        return self._gather(calls, parts)

    def classify(self, request: ClassifyRequest) -> list[Classification]:
        parts = self._parts(len(request.conversations))
        calls = [Classify(self._number, request.for_conversations(request.conversations[a:b])) for a, b in parts]
        return self._gather(calls, parts)

    def moderate(self, texts: Sequence[str]) -> list[object]:
        parts = self._parts(len(texts))
        return self._gather([Moderate(self._number, list(texts[a:b])) for a, b in parts], parts)

    def stats(self) -> Counts:
        """The processes' counts added up (`lowest_concurrency` too: the lowest limits reached, summed);
        a process that is gone counts with what it last reported."""
        self._refresh_stats()
        processes = self._call_processes.processes
        return _merge_stats(
            [self._last_stats.get(id(p), {}) for p in processes], [self._handed.get(id(p), 0) for p in processes]
        )

    def _refresh_stats(self) -> None:
        asked = []
        # Call processes never started have no counts.
        for process in [p for p in self._call_processes.processes if p.gone is None]:
            try:
                asked.append((process, self._call_processes.send(process, CountCalls(self._number), 0, self.name)))
            except ProviderError:
                pass
        for process, answer in asked:
            try:
                self._last_stats[id(process)] = answer.result()
            except ProviderError:
                pass

    def close(self) -> None:
        try:
            self._refresh_stats()
        except ProviderError:
            pass
        if self._owns_call_processes:
            self._call_processes.close()

    # -- plumbing --------------------------------------------------------------------------------
    def _parts(self, size: int) -> list[tuple[int, int]]:
        """Slices of one call: whole when one process can hold it all in flight (the engine's small
        groups), else one share per live process (a judge check or rejudge sending everything)."""
        live = len(self._call_processes.live())
        if size <= self._per_process or live <= 1:
            return [(0, size)]
        share = math.ceil(size / live)
        return [(start, min(size, start + share)) for start in range(0, size, share)]

    def _gather(self, calls: Sequence[Call], parts: list[tuple[int, int]]) -> list[Any]:
        futures = []
        for call, (start, end) in zip(calls, parts, strict=True):
            process = self._call_processes.least_busy(end - start, self.name)
            self._handed[id(process)] = self._handed.get(id(process), 0) + end - start
            futures.append(self._call_processes.send(process, call, end - start, self.name, counted=True))
        return [answer for future in futures for answer in future.result()]


# What a model in call processes reports of their counters, each 0 when no process counted it.
_PROCESS_COUNTS = ("calls", "retries", "rate_limited", "lowest_concurrency")


def _merge_stats(per_process: list[Counts], handed: list[int]) -> Counts:
    """One model's counts from its call processes' own; `handed_per_process` is how the calls were shared."""
    counted = [{k: v for k, v in stats.items() if k in _PROCESS_COUNTS or k == "endpoints"} for stats in per_process]
    # Each call process holds its share of the model's concurrency, so their lowest limits add up.
    merged = add_counts([dict.fromkeys(_PROCESS_COUNTS, 0), *counted], shared_limit=True)
    merged["processes"] = len(handed)
    # Keyed, not a list, so per-process counts add up across xdist workers like every other count.
    merged["handed_per_process"] = {f"p{i}": number for i, number in enumerate(handed, start=1)}
    return merged
