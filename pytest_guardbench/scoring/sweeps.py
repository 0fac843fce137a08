"""Guard threshold sweeps and run costs: pure functions over case records.

A guard that gives P(risk) (Granite, Llama Guard, the semantic guard, any classifier) is swept over
every distinct score of the run: harmful label = positive, score >= threshold = flagged. The result
has the ROC and precision-recall curves, ROC AUC (ties count half), average precision, and the
operating point that reaches a target recall with the lowest false positive rate.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_guardbench.records import CaseRecord


def _ratio(num: float, den: float) -> float | None:
    return None if den == 0 else num / den


def sweep(scored: Sequence[tuple[float, bool]], target_recall: float) -> dict[str, Any]:
    """(score, is_harmful) pairs → curves, AUC, AP and the operating point for `target_recall`."""
    positives = sum(1 for _, harmful in scored if harmful)
    negatives = len(scored) - positives
    by_score: dict[float, list[int]] = defaultdict(lambda: [0, 0])
    for score, harmful in scored:
        by_score[score][0 if harmful else 1] += 1
    curve: list[dict[str, Any]] = []
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
        curve.append({
            "threshold": threshold, "tp": tp, "fp": fp, "fn": positives - tp, "tn": negatives - fp,
            "recall": _ratio(tp, positives), "false_positive_rate": _ratio(fp, negatives), "precision": precision,
        })  # fmt: skip
    defined = positives > 0 and negatives > 0
    reaching = [
        p
        for p in curve
        if p["recall"] is not None and p["recall"] >= target_recall and p["false_positive_rate"] is not None
    ]
    best = min(reaching, key=lambda p: (p["false_positive_rate"], -p["threshold"])) if reaching else None
    return {
        "n": len(scored),
        "positives": positives,
        "negatives": negatives,
        "roc_auc": auc_twice / (2 * positives * negatives) if defined else None,
        "average_precision": average_precision if positives else None,
        "target_recall": target_recall,
        "operating_point": best,
        "operating_point_note": None
        if best
        else f"no threshold reaches recall {target_recall:g}"
        if defined
        else "needs harmful and safe cases",
        "curve": curve,
    }


def guard_sweeps(records: Sequence[CaseRecord], target_recall: float) -> dict[str, Any]:
    """One sweep per guard that scored at least one labelled case (errors after the guard still count:
    the guard's score was given)."""
    by_guard: dict[str, list[tuple[float, bool]]] = defaultdict(list)
    for record in records:
        guard = record.guard
        if (
            guard is not None
            and guard.score is not None
            and record.is_harmful is not None
            and not math.isnan(guard.score)
        ):
            by_guard[guard.guard].append((guard.score, record.is_harmful))
    return {name: sweep(points, target_recall) for name, points in sorted(by_guard.items())}


def _percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (a value that occurred, the same for any order of input)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def usage(records: Sequence[CaseRecord], prices: Mapping[str, Mapping[str, float]]) -> dict[str, Any]:
    """Per-stage time (p50/p95 of each case's share of its batch or call) and the tutor's tokens and
    cost. Cost needs a price for every model that answered and token counts on every answer;
    otherwise it is None (unknown), never 0."""
    stages: dict[str, Any] = {}
    for stage in ("guard", "tutor", "judge"):
        seconds = [r.timings_s[stage] for r in records if stage in r.timings_s]
        stages[stage] = {
            "cases": len(seconds),
            "p50_s": _percentile(seconds, 0.5),
            "p95_s": _percentile(seconds, 0.95),
            "total_s": round(sum(seconds), 6),
        }
    answered = [r.response for r in records if r.tutor_ran and r.response is not None]
    prompt = [a.prompt_tokens for a in answered]
    completion = [a.completion_tokens for a in answered]
    complete = all(t is not None for t in prompt + completion)
    models = sorted({a.model for a in answered})
    cost: float | None = None
    missing_price = [m for m in models if m not in prices]
    if answered and complete and not missing_price:
        cost = 0.0
        for a in answered:
            price = prices[a.model]
            cost += (a.prompt_tokens or 0) * price.get("input_per_million", 0.0) / 1e6 + (
                a.completion_tokens or 0
            ) * price.get("output_per_million", 0.0) / 1e6
    tokens = {
        "answers": len(answered),
        "prompt_tokens": sum(prompt) if prompt and complete else None,  # type: ignore[arg-type]
        "completion_tokens": sum(c for c in completion if c is not None) if completion else None,
        "models": models,
    }
    note = None
    if cost is None and answered:
        note = f"no price for {', '.join(missing_price)}" if missing_price else "some answers carry no token counts"
    return {
        "stages": stages,
        "tutor_tokens": tokens,
        "tutor_cost_usd": None if cost is None else round(cost, 6),
        "cost_note": note,
    }
