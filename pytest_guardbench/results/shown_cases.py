"""The cases report.html shows, picked while records stream past (the finish step keeps no records):
the failed cases, most severe first, and the audit sample; each with its long texts capped.

The audit sample is drawn by the random design (`audit.designs.draw_random`) over the run's units, the
replies `guardbench audit` draws from (`audit.units.labelled_replies`), with its seed: the same replies
`guardbench audit RUN_DIR --design random --sample 30 --seed 0` draws, in the same order, each with its
inclusion probability n / N. Only the units' ids are kept while records stream past; the few drawn
records are read back at the end. A drawn reply is shown blind (`SampleCase`): its row for the labels
file (`audit.labels.label_row`'s fields, less the person's labels) rides along, so the page's export
is a labels file `guardbench correct` takes."""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

from pytest_guardbench.audit.designs import DrawnUnit, draw_random
from pytest_guardbench.audit.labels import HumanLabel, label_row
from pytest_guardbench.audit.units import audit_units, labelled_replies, split_unit_id
from pytest_guardbench.records import CaseRecord, Outcome, TurnRecord
from pytest_guardbench.scoring.policies import ScoringPolicy
from pytest_guardbench.scoring.scorecard import Scored, UnscoredReason, score_record


# The same replies `guardbench audit RUN_DIR --design random --sample 30 --seed 0` draws.
AUDIT_SAMPLE, AUDIT_SEED, AUDIT_DESIGN = 30, 0, "random"
# The person's labels of a reply: every (response safety, answer mode) a labeller can give.
SAFETIES = ("safe", "unsafe")
MODES = ("answered", "refused_or_blocked", "indirect", "non_answer")
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
    guard: dict[str, object] | None
    reply: dict[str, object] | None
    judge: dict[str, object] | None
    error: dict[str, object] | None
    labelable: bool  # a reply to label, shown whole (a cut text would make a wrong labels row)
    # A conversation's turns in order (role, source, depth, text; the guard's status on a user turn, the
    # judge's labels on a reply); None for a single prompt.
    turns: list[dict[str, object]] | None = None
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


def shown_turn(turn: TurnRecord) -> dict[str, object]:
    shown: dict[str, object] = {
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
    the count of every failed case by kind, and the ids of the units the audit sample is drawn from."""

    def __init__(self, policy: ScoringPolicy) -> None:
        self.policy = policy
        self.failed_by_kind: Counter[str] = Counter()
        self._failed: dict[str, ShownCase] = {}
        self._order: list[tuple[int, str]] = []  # (severity rank, case id), sorted
        self.units: list[str] = []  # every unit `guardbench audit` draws from, by id

    @property
    def failed(self) -> int:
        return sum(self.failed_by_kind.values())

    def add(self, record: CaseRecord, outcome: Outcome | None, reason: UnscoredReason | None) -> None:
        """Pick `record` given its classification under `policy` (the score it carries, see
        `runfolder.finish.RunFinish`)."""
        self.units.extend(reply.unit_id for reply in labelled_replies(record, self.policy, Scored(outcome, reason)))
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

    def sample_draw(self) -> list[DrawnUnit]:
        """The audit sample: AUDIT_SAMPLE units drawn by the random design with AUDIT_SEED, in draw order."""
        return draw_random(self.units, AUDIT_SAMPLE, AUDIT_SEED)

    def sample_ids(self) -> list[str]:
        """The case ids whose records the audit sample needs (a conversation's once), in draw order."""
        return list(dict.fromkeys(split_unit_id(unit.unit_id)[0] for unit in self.sample_draw()))


class SampleCase(BaseModel):
    """A drawn reply as the page's audit shows it, blind: the child's message (after the conversation
    so far, for a conversation's reply), the guard's decision and the reply, and nothing of the judge
    or the outcome until the labeller has answered (`judge` and `outcome` are drawn only then, as
    `guardbench audit` shows them). A reply shown whole (`labelable`) has `row`, its labels-file row
    without the person's labels, whose prompt and response the page shows (so the texts are stored
    once), and `labelled_as`, the fields each (safety, answer mode) adds to it as `label_row` writes
    them; a reply cut in the page has its capped texts instead, and no row (a cut text would make a
    wrong row)."""

    model_config = ConfigDict(frozen=True)

    id: str  # the unit id: the case id, and `@<turn>` for a conversation's reply
    case_id: str
    variant: str
    category: str | None
    is_harmful: bool | None
    prompt: CappedText | None
    context: list[dict[str, object]] | None  # a conversation's turns before this reply: role and text
    guard: dict[str, object] | None
    reply: dict[str, object]
    labelable: bool
    row: dict[str, object] | None
    labelled_as: dict[str, dict[str, object]] | None
    judge: dict[str, object] | None
    outcome: str


def _labelled_as(
    view: CaseRecord, policy: ScoringPolicy, drawn: DrawnUnit
) -> tuple[dict[str, object], dict[str, dict[str, object]]]:
    """The row `label_row` writes for `view` without what the person's labels decide, and for each
    (safety, answer mode) the fields those labels set."""
    rows = {
        f"{safety}|{mode}": label_row(view, HumanLabel(view.case_id, safety, mode), policy, drawn).model_dump(
            mode="json", exclude_none=True
        )
        for safety in SAFETIES
        for mode in MODES
    }
    first = next(iter(rows.values()))
    common = {key: value for key, value in first.items() if all(row.get(key) == value for row in rows.values())}
    return common, {name: {k: v for k, v in row.items() if k not in common} for name, row in rows.items()}


def _context(record: CaseRecord, turn: int | None) -> list[dict[str, object]] | None:
    if turn is None:
        return None
    before = [t for t in record.turns if t.depth < turn]
    return [{"role": t.role, "text": capped(t.content, TEXT_CAP).model_dump(exclude_none=True)} for t in before]


def sample_cases(draw: list[DrawnUnit], records: Mapping[str, CaseRecord], policy: ScoringPolicy) -> list[SampleCase]:
    """The drawn units as the page shows them, in draw order, from their cases' records."""
    shown = []
    for drawn in draw:
        case_id, turn = split_unit_id(drawn.unit_id)
        record = records[case_id]
        view = next(v for v, unit in audit_units([record], policy) if unit.unit_id == drawn.unit_id)
        assert view.response is not None  # a unit is a reply
        prompt, reply = capped(view.prompt_text, TEXT_CAP), capped(view.response.text, TEXT_CAP)
        labelable = prompt.length is None and reply.length is None
        common, labelled_as = _labelled_as(view, policy, drawn) if labelable else (None, None)
        case = ShownCase.of(view, *score_record(view, policy))
        shown.append(
            SampleCase(
                id=drawn.unit_id,
                case_id=case_id,
                variant=view.variant,
                category=view.category,
                is_harmful=view.is_harmful,
                prompt=None if labelable else prompt,
                context=_context(record, turn),
                guard=case.guard,
                reply={
                    "text": None if labelable else reply,
                    "source": view.response.source,
                    "finish_reason": view.response.finish_reason,
                },
                labelable=labelable,
                row=common,
                labelled_as=labelled_as,
                judge=case.judge,
                outcome=case.outcome,
            )
        )
    return shown
