"""The stages of one case: guard → decision parser → router → tutor (or refusal text) → judge.

Each stage function takes a batch of drafts and never raises for a model failure: a failing stage
becomes `Draft.error` and then `CaseRecord.error`, which is scored as neither safe nor unsafe.
`engine.Engine` decides which drafts run together and when.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Literal

from pytest_guardbench.settings.config import MalformedPolicy
from pytest_guardbench.guards import Guard
from pytest_guardbench.judges.base import Judge, JudgeInput
from pytest_guardbench.providers.base import CacheMiss, ChatProvider, GenerationParams, Message
from pytest_guardbench.records import (
    Case,
    CaseRecord,
    GuardDecision,
    JudgeVerdict,
    PipelineError,
    PipelineStage,
    TutorReply,
)


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


def routes_to_tutor(decision: GuardDecision | None, policy: MalformedPolicy) -> bool:
    if decision is None or decision.status == "allow":
        return True
    if decision.status == "block":
        return False
    return policy in ("allow", "fallback")


def case_seed(case_id: str) -> int:
    return int.from_bytes(hashlib.sha256(case_id.encode("utf-8")).digest()[:4], "big")


@dataclass
class Draft:
    case: Case
    guard: GuardDecision | None = None
    response: TutorReply | None = None
    tutor_ran: bool = False
    error: PipelineError | None = None
    verdict: JudgeVerdict | None = None
    timings: dict[str, float] | None = None
    missed_cache: bool = False  # a call of the stage it stopped at was not cached (cache-only walk)

    def time(self, stage: str, seconds: float) -> None:
        self.timings = {**(self.timings or {}), stage: round(seconds, 6)}

    @property
    def stopped(self) -> bool:
        return self.error is not None or self.missed_cache


def _in_batch_or_alone(drafts: list[Draft], stage: PipelineStage, run: Callable[[list[Draft]], None]) -> None:
    """Run a stage on the whole batch; if that fails, on each case alone, so one bad case (or one
    failed call) becomes one error record instead of taking the batch with it."""
    try:
        run(drafts)
        return
    except Exception as exc:  # noqa: BLE001 - isolated below
        if len(drafts) == 1:
            _fail(drafts[0], stage, exc)
            return
    for d in drafts:
        try:
            run([d])
        except Exception as exc:  # noqa: BLE001
            _fail(d, stage, exc)


def _fail(draft: Draft, stage: PipelineStage, exc: Exception) -> None:
    if isinstance(exc, CacheMiss):
        draft.missed_cache = True
        return
    draft.error = PipelineError(stage=stage, message=f"{type(exc).__name__}: {exc}")


def guard_stage(drafts: list[Draft], stack: Stack) -> None:
    guard = stack.guard
    if guard is None:
        return

    def run(batch: list[Draft]) -> None:
        started = time.perf_counter()
        raw = guard.screen([d.case.prompt_text for d in batch])
        if len(raw) != len(batch):
            raise RuntimeError(f"guard returned {len(raw)} verdicts for {len(batch)} prompts")
        decisions = [guard.parse(r) for r in raw]
        share = (time.perf_counter() - started) / len(batch)
        for d, decision in zip(batch, decisions, strict=True):
            d.guard = decision
            d.time("guard", share)

    _in_batch_or_alone(drafts, "guard", run)


def tutor_stage(drafts: list[Draft], stack: Stack, tutor: Callable[[], ChatProvider]) -> None:
    """Generate for drafts the guard let through (routing happens before a draft gets here)."""
    try:
        provider = tutor()
    except Exception as exc:  # noqa: BLE001
        for d in drafts:
            d.error = PipelineError(stage="tutor", message=f"could not load tutor: {type(exc).__name__}: {exc}")
        return
    _in_batch_or_alone(drafts, "tutor", lambda batch: _generate(provider, batch, stack))


def refuse(draft: Draft, stack: Stack) -> None:
    """The final response of a case the guard stopped: the configured refusal text."""
    draft.response = TutorReply(
        text=stack.refusal_text, source="guard_block", model=draft.guard.guard if draft.guard else ""
    )


def _generate(tutor: ChatProvider, drafts: list[Draft], stack: Stack) -> None:
    # An empty system prompt (`--guardbench-system-prompt=none`) sends no system message, not an empty one.
    system: list[Message] = [{"role": "system", "content": stack.system_prompt}] if stack.system_prompt else []
    conversations: list[list[Message]] = [[*system, {"role": "user", "content": d.case.prompt_text}] for d in drafts]
    seeds = [case_seed(d.case.case_id) if stack.sample else None for d in drafts]
    started = time.perf_counter()
    completions = tutor.generate(conversations, stack.params, seeds)
    if len(completions) != len(drafts):
        raise RuntimeError(f"tutor returned {len(completions)} completions for {len(drafts)} prompts")
    share = (time.perf_counter() - started) / len(drafts)
    for d, completion in zip(drafts, completions, strict=True):
        d.response = TutorReply(**completion.model_dump(), source="tutor")
        d.tutor_ran = True
        d.time("tutor", share)


def _judge_input(draft: Draft) -> JudgeInput:
    assert draft.response is not None, "the judge stage sees only drafts with a final response"
    return JudgeInput(
        prompt=draft.case.prompt_text,
        response=draft.response.text,
        source=draft.response.source,
        is_harmful=draft.case.is_harmful,
        cut_off=draft.response.finish_reason == "length",
    )


def judge_stage(drafts: list[Draft], stack: Stack) -> None:
    def run(batch: list[Draft]) -> None:
        started = time.perf_counter()
        verdicts = stack.judge.judge([_judge_input(d) for d in batch])
        if len(verdicts) != len(batch):
            raise RuntimeError(f"judge returned {len(verdicts)} verdicts for {len(batch)} responses")
        share = (time.perf_counter() - started) / len(batch)
        for d, verdict in zip(batch, verdicts, strict=True):
            d.verdict = verdict
            d.time("judge", share)

    judged = [d for d in drafts if not d.stopped and d.response is not None]
    if judged:
        _in_batch_or_alone(judged, "judge", run)


Step = Literal["guard", "tutor", "refuse", "judge"]


def next_step(draft: Draft, stack: Stack) -> Step | None:
    """Where a draft goes next, from what it already has: guard → (screen stops here) → tutor, or the
    refusal when the guard stopped it → judge. The one route the engine and the cached walk follow."""
    if draft.stopped:
        return None
    if stack.guard is not None and draft.guard is None:
        return "guard"
    if stack.guard_only:
        return None
    if draft.response is None:
        return "tutor" if routes_to_tutor(draft.guard, stack.malformed_policy) else "refuse"
    if draft.verdict is None:
        return "judge"
    return None


def walk_from_cache(drafts: list[Draft], stack: Stack, tutor: Callable[[], ChatProvider]) -> None:
    """Every stage for the whole list at once, inside `stack.cached_only()`: a draft whose calls are
    all cached ends finished; one that met an uncached call stops there with `missed_cache` set and
    keeps the stages it finished, for the normal walk to go on from."""
    assert stack.cached_only is not None
    runners: dict[str, Callable[[list[Draft]], None]] = {
        "guard": lambda due: guard_stage(due, stack),
        "tutor": lambda due: tutor_stage(due, stack, tutor),
        "judge": lambda due: judge_stage(due, stack),
    }
    with stack.cached_only():
        for stage, run in runners.items():
            due = []
            for d in drafts:
                step = next_step(d, stack)
                if step == "refuse":
                    refuse(d, stack)
                    step = next_step(d, stack)
                if step == stage:
                    due.append(d)
            if due:
                run(due)


def record_of(draft: Draft) -> CaseRecord:
    """The record a draft ends as, redacted: what results.jsonl, the reports and the terminal see."""
    return CaseRecord.for_case(
        draft.case,
        guard=draft.guard,
        tutor_ran=draft.tutor_ran,
        response=draft.response,
        judge=draft.verdict if draft.error is None else None,
        error=draft.error,
        timings_s=draft.timings or {},
    ).redacted()


def preflight_error(judge: Judge) -> str | None:
    """One known-easy judgement before the first case; a broken judge fails every case at once
    instead of after all guard and tutor calls were paid for."""
    probe = JudgeInput(
        prompt="What is two plus two?", response="Two plus two is four.", source="tutor", is_harmful=False
    )
    try:
        [verdict] = judge.judge([probe])
    except CacheMiss:
        raise  # not an answer about the judge: the preflight is made the normal way
    except Exception as exc:  # noqa: BLE001
        return f"judge preflight failed: {type(exc).__name__}: {exc}"
    if verdict.malformed:
        said = " ".join(verdict.raw.split())[:300]
        return (
            f"judge preflight failed: {verdict.reason}; the model said: {said!r}. Try a model that follows "
            'instructions, structured = "on" for a server with JSON-schema output (vLLM, llama.cpp, OpenAI), '
            "or a larger max_tokens in the alias's params"
        )
    return None
