"""guardrail → decision parser → router → tutor (or refusal text) → judge, over a batch of cases.

`run_cases` never raises for a model failure: a failing stage becomes `CaseRecord.error`, which is
scored as neither safe nor unsafe.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pytest_guardbench.config import MalformedPolicy
from pytest_guardbench.guards import Guardrail
from pytest_guardbench.judges import Judge, JudgeInput
from pytest_guardbench.providers.base import ChatProvider, GenerationParams, Message
from pytest_guardbench.schemas import Case, CaseRecord, GuardDecision, JudgeVerdict, PipelineError, PipelineStage, TutorReply


@dataclass(frozen=True)
class Stack:
    """The built components of one run. `tutor` is a callable so a run where every prompt is blocked never loads it."""

    guard: Guardrail | None
    tutor: Callable[[], ChatProvider]
    judge: Judge
    system_prompt: str
    refusal_text: str
    malformed_policy: MalformedPolicy
    params: GenerationParams
    sample: bool = False  # k > 1: sample with a per-case seed instead of greedy decoding
    preflight_judge: bool = False  # check an API/LLM judge once before paying for any generation


def routes_to_tutor(decision: GuardDecision | None, policy: MalformedPolicy) -> bool:
    if decision is None or decision.status == "allow":
        return True
    if decision.status == "block":
        return False
    return policy in ("allow", "fallback")


def case_seed(case_id: str) -> int:
    return int.from_bytes(hashlib.sha256(case_id.encode("utf-8")).digest()[:4], "big")


@dataclass
class _Draft:
    case: Case
    guard: GuardDecision | None = None
    response: TutorReply | None = None
    tutor_ran: bool = False
    error: PipelineError | None = None
    verdict: JudgeVerdict | None = None
    timings: dict[str, float] | None = None

    def time(self, stage: str, seconds: float) -> None:
        self.timings = {**(self.timings or {}), stage: round(seconds, 6)}


def _in_batch_or_alone(drafts: list[_Draft], stage: PipelineStage, run: Callable[[list[_Draft]], None]) -> None:
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


def _fail(draft: _Draft, stage: PipelineStage, exc: Exception) -> None:
    draft.error = PipelineError(stage=stage, message=f"{type(exc).__name__}: {exc}")


def _guard_stage(drafts: list[_Draft], stack: Stack) -> None:
    guard = stack.guard
    if guard is None:
        return

    def run(batch: list[_Draft]) -> None:
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


def _tutor_stage(drafts: list[_Draft], stack: Stack) -> None:
    for d in drafts:
        if d.error is None and not routes_to_tutor(d.guard, stack.malformed_policy):
            d.response = TutorReply(text=stack.refusal_text, source="guard_block", model=d.guard.guard if d.guard else "")
    to_run = [d for d in drafts if d.error is None and d.response is None]
    if not to_run:
        return
    try:
        tutor = stack.tutor()
    except Exception as exc:  # noqa: BLE001
        for d in to_run:
            d.error = PipelineError(stage="tutor", message=f"could not load tutor: {type(exc).__name__}: {exc}")
        return
    _in_batch_or_alone(to_run, "tutor", lambda batch: _generate(tutor, batch, stack))


def _generate(tutor: ChatProvider, drafts: list[_Draft], stack: Stack) -> None:
    conversations: list[list[Message]] = [
        [{"role": "system", "content": stack.system_prompt}, {"role": "user", "content": d.case.prompt_text}] for d in drafts
    ]
    seeds = [case_seed(d.case.case_id) if stack.sample else None for d in drafts]
    started = time.perf_counter()
    completions = tutor.generate(conversations, stack.params, seeds)
    if len(completions) != len(drafts):
        raise RuntimeError(f"tutor returned {len(completions)} completions for {len(drafts)} prompts")
    share = (time.perf_counter() - started) / len(drafts)
    for d, completion in zip(drafts, completions, strict=True):
        d.response = TutorReply(
            text=completion.text,
            source="tutor",
            model=completion.model,
            finish_reason=completion.finish_reason,
            completion_tokens=completion.completion_tokens,
            prompt_tokens=completion.prompt_tokens,
            latency_s=completion.latency_s,
        )
        d.tutor_ran = True
        d.time("tutor", share)


def _judge_stage(drafts: list[_Draft], stack: Stack) -> None:
    def run(batch: list[_Draft]) -> None:
        started = time.perf_counter()
        verdicts = stack.judge.judge(
            [JudgeInput(prompt=d.case.prompt_text, response=d.response.text, source=d.response.source, is_harmful=d.case.is_harmful) for d in batch]  # type: ignore[union-attr]
        )
        if len(verdicts) != len(batch):
            raise RuntimeError(f"judge returned {len(verdicts)} verdicts for {len(batch)} responses")
        share = (time.perf_counter() - started) / len(batch)
        for d, verdict in zip(batch, verdicts, strict=True):
            d.verdict = verdict
            d.time("judge", share)

    judged = [d for d in drafts if d.error is None and d.response is not None]
    if judged:
        _in_batch_or_alone(judged, "judge", run)


def run_cases(cases: Sequence[Case], stack: Stack) -> list[CaseRecord]:
    """Run every stage for a batch of cases; one record per case, in order."""
    drafts = [_Draft(case) for case in cases]
    if not drafts:
        return []
    _guard_stage(drafts, stack)
    _tutor_stage(drafts, stack)
    _judge_stage(drafts, stack)
    return [
        CaseRecord.for_case(
            d.case,
            guard=d.guard,
            tutor_ran=d.tutor_ran,
            response=d.response,
            judge=d.verdict if d.error is None else None,
            error=d.error,
            timings_s=d.timings or {},
        )
        for d in drafts
    ]


class CaseRunner:
    """Per-process memo of finished cases that runs the next few selected cases together.

    A test asks for its own case; the runner also runs the cases that follow it in this process's
    run order (`lookahead` in all), so a local tutor generates in batches while pytest still runs one
    test at a time. The look-ahead is a few tutor batches wide because the guard removes many cases
    before the tutor stage.
    """

    def __init__(self, stack: Stack, lookahead: int) -> None:
        self._stack = stack
        self._batch_size = max(1, lookahead)
        self._done: dict[str, CaseRecord] = {}
        self._preflight_error: str | None = None
        self._preflight_done = not stack.preflight_judge

    def _preflight(self) -> None:
        """One known-easy judgement before the first case; a broken judge fails every case at once
        instead of after all guard and tutor calls were paid for."""
        self._preflight_done = True
        probe = JudgeInput(prompt="What is two plus two?", response="Two plus two is four.", source="tutor", is_harmful=False)
        try:
            [verdict] = self._stack.judge.judge([probe])
        except Exception as exc:  # noqa: BLE001
            self._preflight_error = f"judge preflight failed: {type(exc).__name__}: {exc}"
            return
        if verdict.malformed:
            self._preflight_error = f"judge preflight failed: {verdict.reason}"

    def record_for(self, case: Case, upcoming: Sequence[Case] = ()) -> CaseRecord:
        if not self._preflight_done:
            self._preflight()
        if self._preflight_error is not None:
            error = PipelineError(stage="judge", message=self._preflight_error)
            return CaseRecord.for_case(case, guard=None, tutor_ran=False, response=None, judge=None, error=error)
        if case.case_id not in self._done:
            batch = [case]
            for other in upcoming:
                if len(batch) >= self._batch_size:
                    break
                if other.case_id not in self._done and other.case_id != case.case_id:
                    batch.append(other)
            for record in run_cases(batch, self._stack):
                self._done[record.case_id] = record
        # Hand each record out once: a rerun of the same case (e.g. pytest-rerunfailures) runs it again.
        return self._done.pop(case.case_id)
