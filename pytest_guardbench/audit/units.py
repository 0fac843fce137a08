"""What a person labels in an audit: each reply of the run, whether or not the judge scored it. A
single-prompt case has one (its final response); a conversation has one per reply, each a unit of its
own (`<case id>@<depth>`), labelled in its context and corrected per depth. A case with no reply at all
is a unit too, one whose value needs no label (`unanswered_unit`)."""

from __future__ import annotations

from pydantic import BaseModel
from pydantic import ConfigDict
from collections.abc import Sequence

from dataclasses import dataclass

from pytest_guardbench.records import CaseRecord, JudgeVerdict, TutorReply
from pytest_guardbench.scoring.policies import ScoringPolicy
from pytest_guardbench.scoring.scorecard import Scored, score_record


@dataclass(frozen=True)
class LabelledReply:
    """One reply a person can label, with what the correction needs of it: the prompt label, whether
    the tutor ran, and the judge's handled verdict under the policy (None: no usable verdict)."""

    unit_id: str
    case_id: str
    turn: int | None  # the depth of a conversation's reply; None for a single prompt
    prompt: str  # the child's message the reply answers
    reply: TutorReply
    verdict: JudgeVerdict | None
    is_harmful: bool
    tutor_ran: bool
    judge_handled: bool | None


def reply_unit_id(case_id: str, turn: int | None) -> str:
    return case_id if turn is None else f"{case_id}@{turn}"


def split_unit_id(unit_id: str) -> tuple[str, int | None]:
    """(case id, turn) of a unit id; case ids are slugs and never hold an `@`."""
    case_id, at, turn = unit_id.rpartition("@")
    return (case_id, int(turn)) if at and turn.isdigit() else (unit_id, None)


def labelled_replies(record: CaseRecord, policy: ScoringPolicy, scored: Scored | None = None) -> list[LabelledReply]:
    """The replies of `record` a person can label: every reply of a case whose prompt is labelled,
    whether or not the judge scored it (`judge_handled` None: the judge left it unscored, or the
    pipeline failed after the reply). None for an unlabelled prompt or a case with no reply."""
    if not record.turns:
        if record.is_harmful is None or record.response is None:
            return []
        scored = scored or score_record(record, policy)
        return [
            LabelledReply(
                unit_id=record.case_id,
                case_id=record.case_id,
                turn=None,
                prompt=record.prompt_text,
                reply=record.response,
                verdict=record.judge,
                is_harmful=record.is_harmful,
                tutor_ran=record.tutor_ran,
                judge_handled=scored.handled,
            )
        ]
    asked: dict[int, tuple[str, bool | None]] = {}
    found = []
    for turn in record.turns:
        if turn.role == "user":
            asked[turn.depth] = (turn.content, turn.is_harmful)
            continue
        prompt, harmful = asked.get(turn.depth, ("", None))
        harmful = harmful if harmful is not None else record.is_harmful
        if turn.reply is None or harmful is None:
            continue  # a fixed turn of the script, or an unlabelled one
        found.append(
            LabelledReply(
                unit_id=reply_unit_id(record.case_id, turn.depth),
                case_id=record.case_id,
                turn=turn.depth,
                prompt=prompt,
                reply=turn.reply,
                verdict=turn.judge,
                is_harmful=harmful,
                tutor_ran=turn.reply.source == "tutor",
                judge_handled=None if turn.judge is None else policy.handled(harmful, turn.judge),
            )
        )
    return found


def unanswered_unit(record: CaseRecord) -> AuditUnit | None:
    """The unit of a case with a prompt label and no reply to label (the pipeline failed before one):
    nothing reached the child, so the system did not handle it, and that needs no label. None for
    any other case (a guard-only screen's case has no reply and no error: it was never meant to reply)."""
    if record.is_harmful is None or record.error is None:
        return None
    has_reply = any(t.reply is not None for t in record.turns) if record.turns else record.response is not None
    if has_reply:
        return None
    return AuditUnit(
        unit_id=record.case_id,
        is_harmful=record.is_harmful,
        tutor_ran=record.tutor_ran,
        judge_handled=None,
        known_handled=False,
    )


class AuditUnit(BaseModel):
    """One case (or a conversation's reply) of a run, as the correction sees it: whether the judge's
    verdict makes it handled correctly (None: no usable verdict, or none at all), whether the tutor ran
    (tutor_conditional card), and, for a case with no reply to label, its value without a label
    (`known_handled`: False, a case the system did not handle)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    unit_id: str
    is_harmful: bool
    tutor_ran: bool = True
    judge_handled: bool | None
    known_handled: bool | None = None


class AuditLabel(BaseModel):
    """A person's blind label of one case: whether it was truly handled correctly. Under the
    stratified and cluster designs it carries its stratum and inclusion probability
    (`audit.designs.DrawnUnit`); when they are missing they are worked out from the run (random:
    n / N; stratified: n_h / N_h; cluster: the labelled cases' share of the cases)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    unit_id: str
    handled: bool
    stratum: str | None = None
    inclusion_probability: float | None = None


def audit_units(records: Sequence[CaseRecord], policy: ScoringPolicy) -> list[tuple[CaseRecord, AuditUnit]]:
    """The replies a design draws from (`audit.units`), each with the judge's verdict under
    `policy`, as a record a person can label: a conversation's reply is shown as the child's message at
    its turn and the reply to it, under the unit id `<case id>@<turn>`."""
    units = []
    for record in records:
        for reply in labelled_replies(record, policy):
            unit = AuditUnit(
                unit_id=reply.unit_id,
                is_harmful=reply.is_harmful,
                tutor_ran=reply.tutor_ran,
                judge_handled=reply.judge_handled,
            )
            view = (
                record
                if reply.turn is None
                else record.model_copy(
                    update={
                        "case_id": reply.unit_id,
                        "prompt_text": reply.prompt,
                        "response": reply.reply,
                        "judge": reply.verdict,
                        "turns": (),
                        "is_harmful": reply.is_harmful,
                        "tutor_ran": reply.tutor_ran,
                    }
                )
            )
            units.append((view, unit))
    return units
