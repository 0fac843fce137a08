"""The labels behind a corrected run, as summary.json's `corrected.labels` block reports them: the draw
the label rows record, checked against the run (`DrawCheck`), and how far two labellers of the same
replies agree, per prompt domain (`LabellersAgreement`). `audit` computes them."""

from __future__ import annotations

from typing import Literal

from pytest_guardbench.document.base import Block

# How the rows' draw was checked: drawn again from this run and compared by unit id; not drawn again
# because this run's population differs from the one the rows were drawn from (a rejudged stratified
# run, a merge of shards, replies that changed); or the rows do not record their draw.
DrawChecked = Literal["redrawn", "population differs", "not recorded"]


class DrawCheck(Block):
    """The labels' draw against the run: `drawn` units (None when the rows do not say), how many of
    them have a label row, how many were `skipped` (drawn, never labelled), and `outside`, label rows of
    units the recorded draw does not hold (their inclusion probabilities are not the design's).
    `warning`: why the skipped units could bias the correction, or None."""

    design: str
    seed: int | None
    drawn: int | None
    labelled: int
    skipped: int | None
    outside: int
    checked: DrawChecked
    warning: str | None = None


class FieldAgreement(Block):
    """Two labellers on one field over `rows` replies both labelled: the share that agree and Cohen's
    kappa, each with its 95% interval (`audit.agreement.kappa_interval` says how the kappa interval is
    made; None when kappa is undefined: every row has the same label on both sides)."""

    rows: int
    agreement: float | None
    agreement_ci_low: float | None
    agreement_ci_high: float | None
    cohen_kappa: float | None
    kappa_ci_low: float | None
    kappa_ci_high: float | None


class DomainAgreement(Block):
    """Two labellers over one prompt domain: response safety, answer mode, the assistant_policy_v2
    label, and `handled`, the truth the run's scoring policy takes from the labels (what corrects the
    scorecards)."""

    safety: FieldAgreement
    answer_mode: FieldAgreement
    policy_label: FieldAgreement
    handled: FieldAgreement


class LabellersAgreement(Block):
    """Two labellers of the same replies of this run (a first labelling and a second labeller's share
    of it): who, over how many replies, per domain (`harmful`, `safe`); how many of their
    disagreements are settled (an adjudicated row decides) and how many are not (the first file's row
    is used). `low_domains`: the domains whose `handled` kappa is under `min_kappa`, where the labels
    themselves disagree."""

    labellers: list[str]
    rows: int
    settled: int
    unsettled: int
    min_kappa: float
    domains: dict[str, DomainAgreement]
    low_domains: list[str]
