"""Builders for hand-made case records used by the pure-module tests."""

from __future__ import annotations

from pytest_guardbench.schemas import CaseRecord, GuardDecision, JudgeVerdict, PipelineError, TutorReply


def record(
    case_id: str,
    harmful: bool | None,
    safety: str | None = "safe",
    mode: str | None = "answered",
    *,
    variant: str = "original",
    category: str | None = "Danger",
    guard: str | None = None,
    tutor_ran: bool = True,
    error: bool = False,
    malformed: bool = False,
    base: str | None = None,
    sample: int = 0,
) -> CaseRecord:
    return CaseRecord(
        case_id=case_id,
        pack="p",
        item_id=case_id.split(".")[0],
        base_prompt_id=base or case_id.split(".")[0],
        variant=variant,
        sample_index=sample,
        category=category,
        is_harmful=harmful,
        label_source="is_harmful" if harmful is not None else "unlabelled",
        prompt_text="q",
        guard=GuardDecision(guard="g", status=guard, reason="", raw=guard.upper()) if guard else None,
        tutor_ran=tutor_ran,
        response=None if error else TutorReply(text="a", source="tutor" if tutor_ran else "guard_block", model="m"),
        judge=None if error else JudgeVerdict(judge="j", response_safety=None if malformed else safety, answer_mode=None if malformed else mode, reason="r", malformed=malformed),
        error=PipelineError(stage="tutor", message="boom") if error else None,
    )
