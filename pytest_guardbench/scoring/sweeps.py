"""Guard threshold sweeps and the percentiles of run times: pure arithmetic (`tally.RunTally` feeds them).

A guard that gives P(risk) (Granite, Llama Guard, the semantic guard, any classifier) is swept over
every distinct score of the run: harmful label = positive, score >= threshold = flagged. The result
has the ROC and precision-recall curves, ROC AUC (ties count half), average precision, and the
operating point that reaches a target recall with the lowest false positive rate.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

from pytest_guardbench.document.scorecards import GuardSweep, SweepPoint


def _ratio(num: float, den: float) -> float | None:
    return None if den == 0 else num / den


def sweep(scored: Sequence[tuple[float, bool]], target_recall: float) -> GuardSweep:
    """(score, is_harmful) pairs → curves, AUC, AP and the operating point for `target_recall`."""
    positives = sum(1 for _, harmful in scored if harmful)
    negatives = len(scored) - positives
    by_score: dict[float, list[int]] = defaultdict(lambda: [0, 0])
    for score, harmful in scored:
        by_score[score][0 if harmful else 1] += 1
    curve: list[SweepPoint] = []
    tp = fp = 0
    auc_twice = 0.0  # trapezoids in units of (1/positives)*(1/negatives), times two
    average_precision = 0.0
    for threshold in sorted(by_score, reverse=True):
        new_tp, new_fp = by_score[threshold]
        auc_twice += new_fp * (2 * tp + new_tp)
        tp, fp = tp + new_tp, fp + new_fp
        precision = _ratio(tp, tp + fp)
        if positives and new_tp and precision is not None:
            average_precision += (new_tp / positives) * precision
        curve.append(
            SweepPoint(
                threshold=threshold,
                tp=tp,
                fp=fp,
                fn=positives - tp,
                tn=negatives - fp,
                recall=_ratio(tp, positives),
                false_positive_rate=_ratio(fp, negatives),
                precision=precision,
            )
        )
    defined = positives > 0 and negatives > 0
    reaching = [
        (p.false_positive_rate, -p.threshold, p)
        for p in curve
        if p.recall is not None and p.recall >= target_recall and p.false_positive_rate is not None
    ]
    best = min(reaching, key=lambda r: (r[0], r[1]))[2] if reaching else None
    return GuardSweep(
        n=len(scored),
        positives=positives,
        negatives=negatives,
        roc_auc=auc_twice / (2 * positives * negatives) if defined else None,
        average_precision=average_precision if positives else None,
        target_recall=target_recall,
        operating_point=best,
        operating_point_note=None
        if best
        else f"no threshold reaches recall {target_recall:g}"
        if defined
        else "needs harmful and safe cases",
        curve=curve,
    )


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (a value that occurred, the same for any order of input)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]
