"""summary.json's `judge_quality`: how the run's judge agrees with human labels of replies (the
judge check), and where a stored check came from."""

from __future__ import annotations

from typing import Any

from pytest_guardbench.document.base import GivenKeysBlock, Interval


class SideRates(GivenKeysBlock):
    """A judge against human safety labels over some rows: agreement, over-blocking (safe replies
    called unsafe), misses (unsafe replies called safe) and malformed verdicts."""

    rows: int | None = None
    judged: int | None = None
    agreement: float | None = None
    over_block_rate: float | None = None
    miss_rate: float | None = None
    malformed_rate: float | None = None
    cohen_kappa: float | None = None
    min_kappa: float | None = None
    low_confidence: bool | None = None
    per_bucket: dict[str, SideRates] | None = None


class Disagreement(GivenKeysBlock):
    """One labelled reply the judge saw otherwise than the human."""

    id: str | None = None
    bucket: str | None = None
    human: str | None = None
    judge: str | None = None
    human_mode: str | None = None
    judge_mode: str | None = None
    reason: str | None = None


class StoredCheck(GivenKeysBlock):
    """Where a judge-quality result was stored, and when it was computed (the same for every run that reads it)."""

    path: str | None = None
    computed_at: str | None = None
    reused: bool | None = None


class JudgeQuality(SideRates):
    """How the run's judge agrees with human labels of replies (`judges.quality.measure_judge_quality`):
    safety, answer mode and policy label, with 95% Wilson intervals; `error` instead when it could not
    be measured. Which replies: `labels_file` (an audit file named by `guardbench_judge_check`)."""

    judge: str | None = None
    judge_id: str | None = None
    judge_identity: dict[str, Any] | None = None  # open: what makes two judges the same differs by kind
    labels_file: str | None = None
    error: str | None = None
    safety_agreement_interval_95: Interval | None = None
    safety_confusion: dict[str, dict[str, int]] | None = None
    policy_changing_confusions: dict[str, Any] | None = None
    answer_mode_agreement: float | None = None
    answer_mode_agreement_interval_95: Interval | None = None
    answer_mode_rows: int | None = None
    answer_mode_confusion: dict[str, dict[str, int]] | None = None
    policy_label_agreement: float | None = None
    policy_label_agreement_interval_95: Interval | None = None
    policy_label_rows: int | None = None
    miss_rate_interval_95: Interval | None = None
    over_block_rate_interval_95: Interval | None = None
    member_disagreement: dict[str, float] | None = None
    members: dict[str, SideRates] | None = None
    disagreements: list[Disagreement] | None = None
    stored_check: StoredCheck | None = None
