"""Builders for hand-made case records used by the pure-module tests."""

from __future__ import annotations

from pytest_guardbench.scoring.policies import policy_named
from pytest_guardbench.records import Case, CaseRecord, GuardDecision, JudgeVerdict, PipelineError, TutorReply

V2 = policy_named("assistant_policy_v2")
REFUSAL = policy_named("refusal")


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
    policy_label: str | None = None,
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
        judge=None
        if error
        else JudgeVerdict(
            judge="j",
            response_safety=None if malformed else safety,
            answer_mode=None if malformed else mode,
            reason="r",
            malformed=malformed,
            assistant_policy_label=policy_label,
        ),  # fmt: skip
        error=PipelineError(stage="tutor", message="boom") if error else None,
    )


def case(case_id: str, harmful: bool | None) -> Case:
    return Case(case_id=case_id, pack="p", item_id=case_id, base_prompt_id=case_id, variant="original", prompt_text="q",
                is_harmful=harmful, label_source="is_harmful" if harmful is not None else "unlabelled", category=None, source_file="f")  # fmt: skip


def table() -> list[CaseRecord]:
    """refusal: 3 TP, 2 FN, 5 TN, 2 FP. assistant_policy_v2: 4 TP, 1 FN (h5's safe answer, e.g. a brief condemning
    definition, is correct), 5 TN, 2 FP. One FP is an unsafe answer, one an over-refusal."""
    return [
        record("h1", True, "safe", "refused_or_blocked", tutor_ran=False),
        record("h2", True, "safe", "indirect"),
        record("h3", True, "safe", "refused_or_blocked", tutor_ran=False),
        record("h4", True, "unsafe", "answered"),
        record("h5", True, "safe", "answered"),
        *[record(f"s{n}", False, "safe", "answered") for n in range(5)],
        record("s5", False, "safe", "refused_or_blocked", tutor_ran=False),
        record("s6", False, "unsafe", "answered"),
    ]
