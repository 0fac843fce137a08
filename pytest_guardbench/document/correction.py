"""summary.json's `corrected` block (and corrected.json): the scorecards corrected by a person's
labels of the run's own replies, with the judge measured on those labels and what became of each
label row. `audit` computes them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from pytest_guardbench.document.base import Block
from pytest_guardbench.document.labelling import DrawCheck, LabellersAgreement

# How the labelled replies were drawn: each with a known inclusion probability. `cluster` draws whole
# cases (a conversation with every one of its replies).
Design = Literal["random", "stratified", "cluster"]
DESIGNS: tuple[Design, ...] = ("random", "stratified", "cluster")


class CorrectedMetric(BaseModel):
    """One corrected rate of one domain (e.g. system recall). `judge_only`: the judge's own rate
    over the units of the domain it scored; `labels_only`: the labelled units' (weighted) rate;
    `estimate` and the 95% interval `ci_low`..`ci_high`: corrected over every unit of the domain, None
    when none of it is labelled. `n_total` counts every unit, scored or not."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    judge_only: float | None
    labels_only: float | None
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    n_labelled: int
    n_total: int
    method: str
    note: str | None = None


class CorrectedPair(BaseModel):
    """The two corrected rates of one scorecard or group."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    recall: CorrectedMetric
    false_positive_rate: CorrectedMetric


class Rate(BaseModel):
    """A (weighted) rate over `n` labelled units with its 95% interval; all None when n is 0."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int


class JudgeOnRun(BaseModel):
    """How the judge did on this run's labelled units with a verdict (see `judge_on_this_run`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_labelled: int
    n_no_verdict: int
    weighted: bool
    agreement: Rate
    cohen_kappa: float | None
    kappa_ci_low: float | None
    kappa_ci_high: float | None
    miss_rate: Rate
    over_block_rate: Rate


class CorrectedRun(BaseModel):
    """The JSON-ready correction block of a run (`model_dump(mode="json")`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    design: Design
    min_labels: int  # the labels a domain needs for an interval (1 since every labelled domain gets one)
    n_units: int
    n_labelled: int
    system: CorrectedPair
    tutor_conditional: CorrectedPair
    groups: dict[str, CorrectedPair]
    judge_on_this_run: JudgeOnRun


class CorrectedDepth(BaseModel):
    """`recall_by_turn` at one depth, corrected: the share of harmful conversations the system caught
    (refused or blocked, with no unsafe reply before) at this depth or earlier."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    depth: int
    recall: CorrectedMetric


class CorrectedConversations(BaseModel):
    """The conversations corrected as conversations, from labels of every reply of a sample of them
    (the `cluster` design): the conversation scorecards (a conversation is handled as the run's
    conversation metrics score it: unsafe when any reply is) and `recall_by_turn`. A conversation
    counts as labelled only when each of its replies is; `n_partly_labelled` were not used."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_conversations: int
    n_labelled: int
    n_partly_labelled: int
    scorecards: CorrectedRun
    recall_by_turn: list[CorrectedDepth]


class LabelUse(Block):
    """What became of the label rows on this run: one row per unit, taken from the files given (a
    settled row where one exists, else the first file's that labels the unit)."""

    labels_file: str  # the first file given
    design: Design
    rows: int
    used: int
    reply_changed: int  # the run's reply differs from the labelled one
    not_in_run: int  # no scored single-reply case of this run has the row's id
    undecided: int  # the row's labels cannot decide the case under the run's policy
    labels_files: list[str] = []  # every file given, in order (the first is labels_file)
    labellers: list[str] = []  # who wrote the rows (a settled row: its adjudicator)
    settled: int = 0  # units whose row an adjudication settled
    unsettled: int = 0  # units two files label differently, not settled: the first file's row is used
    draw: DrawCheck | None = None


class Correction(Block):
    """summary.json's `corrected` block: the labels used and the corrected scorecards; a run with
    conversations also has its conversations' replies corrected as replies, per depth, and, when the
    labels drew whole conversations (`cluster`), the conversations corrected as conversations."""

    labels: LabelUse
    scorecards: CorrectedRun
    conversation_replies: CorrectedRun | None = None
    labellers: LabellersAgreement | None = None  # two labellers of the same replies: how far they agree
    conversations: CorrectedConversations | None = None


def corrected_document(correction: Correction) -> dict[str, Any]:
    """corrected.json: the corrected scorecards, with the judge measured on this run's labels and the
    labels used (`guardbench correct --json` prints the same document)."""
    cards = correction.scorecards.model_dump(mode="json")
    replies = correction.conversation_replies
    talks = correction.conversations
    return {
        **cards,
        "labels": correction.labels.model_dump(mode="json"),
        **({"conversation_replies": replies.model_dump(mode="json")} if replies is not None else {}),
        **({"labellers": correction.labellers.model_dump(mode="json")} if correction.labellers is not None else {}),
        **({"conversations": talks.model_dump(mode="json")} if talks is not None else {}),
    }
