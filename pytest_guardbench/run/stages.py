"""What the pipeline is given: the built components of a run (`Stack`: guard, tutor, judge and the
settings that change their answers) and how each stage is fed (`StageLimits`: batch size and calls
in flight)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from pytest_guardbench.guards import Guard
from pytest_guardbench.judges.base import Judge
from pytest_guardbench.providers.base import ChatProvider, GenerationParams
from pytest_guardbench.records import PipelineStage
from pytest_guardbench.run.attacker import Attacker
from pytest_guardbench.settings.config import MalformedPolicy


@dataclass(frozen=True)
class StageLimits:
    """How one stage is fed: up to `batch` cases per call, up to `in_flight` calls at once. A local
    model wants big batches one at a time; an API wants small groups, many at once."""

    batch: int = 8
    in_flight: int = 1
    wait_s: float = 0.002  # how long a partial batch waits for more cases


LOCAL_MODEL = StageLimits(batch=8, in_flight=1)
# A Batch API stage: every case that reaches the stage in the same half second goes up as one file.
BATCH_API = StageLimits(batch=50_000, in_flight=1, wait_s=0.5)
INSTANT = StageLimits(batch=256, in_flight=1)  # rules and keyword units: no model, microseconds per case


def api_limits(concurrency: int) -> StageLimits:
    """Small groups of calls per stage thread, enough groups to fill the provider's own limit: one
    thread hop per call cost a third of the CPU a call needs (bench/bench_engine_api.py)."""
    concurrency = max(1, concurrency)
    batch = max(1, min(8, concurrency // 4))
    return StageLimits(batch=batch, in_flight=-(-concurrency // batch))


@dataclass(frozen=True)
class Stack:
    """The built components of one run. `tutor` is a callable so a run where every prompt is blocked never loads it."""

    guard: Guard | None
    tutor: Callable[[], ChatProvider]
    judge: Judge
    system_prompt: str
    refusal_text: str
    malformed_policy: MalformedPolicy
    params: GenerationParams
    sample: bool = False  # k > 1: sample with a per-case seed instead of greedy decoding
    guard_only: bool = False  # `guardbench screen`: a case ends after the guard
    preflight_judge: bool = False  # check an API/LLM judge once before paying for any generation
    limits: Mapping[PipelineStage, StageLimits] = field(
        default_factory=lambda: {"guard": INSTANT, "tutor": LOCAL_MODEL, "judge": INSTANT}
    )
    # With a response cache: a context in which model calls answer from the cache alone (CacheMiss
    # otherwise), so cached cases are finished at once, without threads (`engine.Engine.submit`).
    cached_only: Callable[[], AbstractContextManager[None]] | None = None
    judge_id: str | None = None  # the judge's identity, written on every record it gave a verdict
    # Writes the user turns of attack conversations (`--guardbench-attacker`); its stage takes the
    # limits under "attacker", else the tutor's.
    attacker: Callable[[], Attacker] | None = None
