"""Which numbers `guardbench compare` shows: every run's audit-corrected recall, FPR, safe success and
BER when every run was corrected by labels of its own replies, else every run's judge-only numbers; a
corrected run beside a judge-only one is refused unless the caller allows it (then judge-only)."""

from __future__ import annotations

from pytest_guardbench.document.correction import CorrectedMetric
from pytest_guardbench.document.summary import RunSummary
from pytest_guardbench.errors import UsageError
from pytest_guardbench.results.sources import CORRECTED, JUDGE_ONLY, labelled

# The metrics labels correct (from the corrected recall and FPR); F1 and over-refusal are the judge's alone.
CORRECTED_METRICS = ("balanced_error_rate", "recall", "safe_success", "false_positive_rate")

Cell = tuple[float | None, tuple[float, float] | None]  # a value and its 95% interval, where there is one


class CompareError(UsageError):
    """The runs cannot be compared; the message names the run and the reason."""


def metric_source(metric: str, corrected: bool) -> str:
    """Where a compared metric's numbers come from: `corrected` or `judge-only`."""
    return CORRECTED if corrected and metric in CORRECTED_METRICS else JUDGE_ONLY


def sources_line(corrected: bool) -> str:
    """The one line that says which kind of numbers a comparison shows."""
    if corrected:
        return (
            "Numbers: recall, FPR, safe success and BER audit-corrected by each run's labels of its own replies "
            "(95% intervals in brackets); F1 and over-refusal judge-only (no label corrects them)"
        )
    return "Numbers: judge-only (counted from each run's judge's verdicts alone)"


def corrected_sources(named: list[tuple[str, RunSummary]], allow_mixed: bool) -> tuple[bool, tuple[str, ...]]:
    """Whether to compare corrected numbers (every run has them), with the warning when runs of both
    kinds are compared on their judge-only numbers; `CompareError` for both kinds not allowed."""
    corrected = [name for name, summary in named if labelled(summary)]
    if not corrected:
        return False, ()
    if len(corrected) == len(named):
        return True, ()
    judged = ", ".join(name for name, summary in named if not labelled(summary))
    said = f"{', '.join(corrected)} corrected by labels of its own replies, {judged} judge-only"
    if not allow_mixed:
        raise CompareError(
            f"{said}, so a difference may be the labels' rather than the stacks'; label and correct the others "
            "(guardbench audit, guardbench correct), or pass --allow-mixed-sources to compare every run's "
            "judge-only numbers"
        )
    return False, (f"{said}: every run's judge-only numbers are shown",)


def _cell(metric: CorrectedMetric | None, flip: bool = False) -> Cell:
    if metric is None or metric.estimate is None:
        return None, None
    bounds = None if metric.ci_low is None or metric.ci_high is None else (metric.ci_low, metric.ci_high)
    if flip:  # safe success = 1 - FPR
        return 1 - metric.estimate, None if bounds is None else (1 - bounds[1], 1 - bounds[0])
    return metric.estimate, bounds


def corrected_cells(summary: RunSummary, variant: str | None) -> dict[str, Cell]:
    """A corrected run's recall, FPR, safe success and BER, of the whole run (`variant` None) or of one
    variant (its corrected group); BER from the corrected recall and FPR, without an interval. A
    column the labels do not estimate has no value."""
    assert summary.corrected is not None
    cards = summary.corrected.scorecards
    pair = cards.system if variant is None else cards.groups.get(f"variant={variant}")
    recall = _cell(pair.recall if pair is not None else None)
    fpr = _cell(pair.false_positive_rate if pair is not None else None)
    ber = None if recall[0] is None or fpr[0] is None else ((1 - recall[0]) + fpr[0]) / 2
    return {
        "recall": recall,
        "false_positive_rate": fpr,
        "safe_success": _cell(pair.false_positive_rate if pair is not None else None, flip=True),
        "balanced_error_rate": (ber, None),
    }
