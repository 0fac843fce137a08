"""The cases report.html shows, picked while records stream past (the finish step keeps no records):
the failed cases, most severe first, and the audit sample; each with its long texts capped."""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from typing import Any

from pydantic import BaseModel, ConfigDict

from pytest_guardbench.audit.designs import classified_stratum, draw_ids
from pytest_guardbench.records import CaseRecord, Outcome, TurnRecord
from pytest_guardbench.scoring.policies import ScoringPolicy
from pytest_guardbench.scoring.scorecard import UnscoredReason


AUDIT_SAMPLE, AUDIT_SEED = 30, 0  # the same cases `guardbench audit --sample 30 --seed 0` starts with
MAX_FAILED_ROWS = 1000  # the most severe first; the page stays usable, results.jsonl has every case


TEXT_CAP = 4000  # characters of a prompt or reply shown; the rest is cut, with a note of the full length


DETAIL_CAP = 1000  # characters of a guard or judge reason, raw model output or error message shown


# The failed-case table's order: a harmful prompt that got through is what a safety reviewer reads first.
SEVERITY = ("FN", "FP", "error", "judge-malformed")


SEVERITY_NAMES = {"FN": "missed harmful", "FP": "over-blocked", "error": "errors", "judge-malformed": "judge malformed"}


def failed_label(outcome: str | None, reason: str | None) -> str | None:
    """How the failed-case table names a case it lists; None for a case handled correctly or unlabelled."""
    if outcome in ("FN", "FP"):
        return outcome
    if reason == "error":
        return "error"
    if reason in ("judge_malformed", "judge_incomplete"):
        return "judge-malformed"
    return None


class CappedText(BaseModel):
    """A text as the page shows it: `text` is at most the cap; `length` is the full length when it was cut."""

    model_config = ConfigDict(frozen=True)

    text: str
    length: int | None = None


def capped(text: str, cap: int) -> CappedText:
    return CappedText(text=text) if len(text) <= cap else CappedText(text=text[:cap] + "…", length=len(text))


class ShownCase(BaseModel):
    """One case as the page stores it (once, whichever tables show it); texts capped."""

    model_config = ConfigDict(frozen=True)

    id: str
    outcome: str  # TP/FP/TN/FN, or unscored:<reason>
    variant: str
    category: str | None
    is_harmful: bool | None
    prompt: CappedText
    guard: dict[str, Any] | None
    reply: dict[str, Any] | None
    judge: dict[str, Any] | None
    error: dict[str, Any] | None
    labelable: bool  # a reply to label, shown whole (a cut text would make a wrong labels row)
    # A conversation's turns in order (role, source, depth, text; the guard's status on a user turn, the
    # judge's labels on a reply); None for a single prompt.
    turns: list[dict[str, Any]] | None = None
    first_unsafe_turn: int | None = None

    @classmethod
    def of(cls, record: CaseRecord, outcome: Outcome | None, reason: UnscoredReason | None) -> ShownCase:
        guard, reply, verdict, error = record.guard, record.response, record.judge, record.error
        prompt = capped(record.prompt_text, TEXT_CAP)
        reply_text = capped(reply.text, TEXT_CAP) if reply else None
        return cls(
            id=record.case_id,
            outcome=outcome or f"unscored:{reason}",
            variant=record.variant,
            category=record.category,
            is_harmful=record.is_harmful,
            prompt=prompt,
            guard=None
            if guard is None
            else {
                "guard": guard.guard,
                "status": guard.status,
                "score": guard.score,
                "reason": capped(guard.reason, DETAIL_CAP),
                "raw": capped(guard.raw, DETAIL_CAP),
            },
            reply=None
            if reply is None or reply_text is None
            else {
                "text": reply_text,
                "source": reply.source,
                "model": reply.model,
                "finish_reason": reply.finish_reason,
            },
            judge=None
            if verdict is None
            else {
                "judge": verdict.judge,
                "safety": verdict.response_safety,
                "mode": verdict.answer_mode,
                "malformed": verdict.malformed,
                "reason": capped(verdict.reason, DETAIL_CAP),
                "raw": capped(verdict.raw, DETAIL_CAP),
            },
            error=None if error is None else {"stage": error.stage, "message": capped(error.message, DETAIL_CAP)},
            labelable=reply_text is not None
            and reply_text.length is None
            and prompt.length is None
            and not record.turns,
            turns=[shown_turn(turn) for turn in record.turns] or None,
            first_unsafe_turn=record.first_unsafe_turn,
        )


def shown_turn(turn: TurnRecord) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "role": turn.role,
        "source": turn.source,
        "depth": turn.depth,
        "text": capped(turn.content, TEXT_CAP).model_dump(exclude_none=True),
    }
    if turn.guard is not None:
        shown["guard"] = {"status": turn.guard.status, "score": turn.guard.score}
    if turn.judge is not None:
        verdict = turn.judge
        shown["judge"] = {
            "safety": verdict.response_safety,
            "mode": verdict.answer_mode,
            "malformed": verdict.malformed,
        }
    return shown


class CasePicks:
    """The cases the page shows, picked while records stream past: the most severe failed cases (at
    most MAX_FAILED_ROWS, in SEVERITY order then by id, kept capped so a huge record costs little),
    the count of every failed case by kind, and the audit sample's strata as case ids."""

    def __init__(self, policy: ScoringPolicy) -> None:
        self.policy = policy
        self.failed_by_kind: Counter[str] = Counter()
        self._failed: dict[str, ShownCase] = {}
        self._order: list[tuple[int, str]] = []  # (severity rank, case id), sorted
        self.strata: dict[tuple[str, str, str], list[str]] = defaultdict(list)

    @property
    def failed(self) -> int:
        return sum(self.failed_by_kind.values())

    def add(self, record: CaseRecord, outcome: Outcome | None, reason: UnscoredReason | None) -> None:
        """Pick `record` given its classification under `policy` (the score it carries, see `runfolder.finish.RunFinish`)."""
        if record.response is not None:
            self.strata[classified_stratum(record, outcome, reason)].append(record.case_id)
        label = failed_label(outcome, reason)
        if label is None:
            return
        self.failed_by_kind[label] += 1
        key = (SEVERITY.index(label), record.case_id)
        if len(self._order) >= MAX_FAILED_ROWS and key > self._order[-1]:
            return
        bisect.insort(self._order, key)
        self._failed[record.case_id] = ShownCase.of(record, outcome, reason)
        if len(self._order) > MAX_FAILED_ROWS:
            del self._failed[self._order.pop()[1]]

    def failed_cases(self) -> list[ShownCase]:
        """The picked failed cases, most severe first."""
        return [self._failed[case_id] for _, case_id in self._order]

    def sample_ids(self) -> list[str]:
        return draw_ids(self.strata, AUDIT_SAMPLE, AUDIT_SEED)
