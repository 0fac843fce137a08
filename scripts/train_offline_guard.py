"""Fit the offline guard's logistic head on the TRAIN split of pytest_guardbench/datasets/guard_prompts_v1.jsonl and
write pytest_guardbench/guards/heads/offline_guard_v1.json (`--head offline-kb`: the head of the guard with the
maintained resources' features, guards/knowledge.py, written to offline_guard_kb_v1.json; same rows, grid and rules).

The test split (130 prompts) was committed before this script or any head existed. Everything is
chosen inside the train split: the L2 strength by 5-fold cross-validation (balanced accuracy), then
the threshold on the same folds' out-of-fold probabilities, by a rule fixed before any test number
was seen: the highest recall whose cross-validated false positive rate is at most 0.15 (a margin
under the 0.20 bar). The head is a logistic regression fitted to its optimum by scikit-learn
(scripts/logistic_fit.py). The test split is read only after the head is fitted, to record its
counts there in the head file (a test re-measures them).

    .venv/bin/python scripts/train_offline_guard.py [--head offline|offline-kb] [--check]

After a fit it prints the guard's recall and FPR, with 95% Wilson intervals, on the train split, the
test split and the separately written source guard_source_slurs_v1.jsonl (scripts/make_guard_source_slurs.py),
which is read only to report.

--check fits again and exits 1 when the result differs from the committed head: other train rows,
another L2 or threshold, a P(risk) further than REFIT_TOLERANCE (1e-4) from the committed head's on
any train row, or a different decision on a train row whose committed P(risk) is not within that
tolerance of the threshold. The tolerance is derived in pytest_guardbench/_util/logistic.py: refits
with embeddings from other CPU kernels, disturbed features, shuffled rows or other thread counts
moved this head by at most 1.1e-6 (1.1e-7 from the CPU kernels), and changed no decision.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from pytest_guardbench._util.logistic import LogisticHead
from pytest_guardbench.guards.knowledge import load_knowledge
from pytest_guardbench.guards.offline_guard import (
    FEATURE_VERSION,
    HEAD_FILE,
    KB_FEATURE_VERSION,
    KB_HEAD_FILE,
    OfflineGuard,
    guard_features,
    held_out_counts,
)
from pytest_guardbench.providers import ProviderOptions, minilm_embedder
from pytest_guardbench.scoring.agreement import wilson_interval

sys.path.insert(0, str(Path(__file__).resolve().parent))
from logistic_fit import compare_heads, fit_head, out_of_fold_probabilities, provenance  # noqa: E402 - a sibling module

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT / "pytest_guardbench" / "datasets" / "guard_prompts_v1.jsonl"
SEPARATE_SOURCE = ROOT / "pytest_guardbench" / "datasets" / "guard_source_slurs_v1.jsonl"
L2_GRID = (0.1, 0.3, 1.0, 3.0, 10.0)
MAX_CV_FPR = 0.15
THRESHOLDS = tuple(round(0.30 + 0.05 * i, 2) for i in range(11))  # 0.30 ... 0.80


def choose_threshold(p: np.ndarray, y: np.ndarray) -> tuple[float, dict[str, dict[str, float]], float]:
    """The threshold the rule picks, the cross-validated recall and FPR at every candidate, and the
    smallest distance of an out-of-fold probability to a candidate (the table cannot change between
    machines unless their probabilities differ by that much)."""
    table = {
        str(t): {"recall": round(float((p[y == 1] >= t).mean()), 4), "fpr": round(float((p[y == 0] >= t).mean()), 4)}
        for t in THRESHOLDS
    }
    allowed = [t for t in THRESHOLDS if table[str(t)]["fpr"] <= MAX_CV_FPR]
    best = max(allowed, key=lambda t: (table[str(t)]["recall"], -t)) if allowed else THRESHOLDS[-1]
    return best, table, float(min(np.abs(p - t).min() for t in THRESHOLDS))


def load_rows(path: Path = DATASET, splits: tuple[str, ...] = ("train", "test")) -> list[dict[str, object]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        row = json.loads(line)
        if row.get("split") not in splits or not isinstance(row.get("is_harmful"), bool):
            raise SystemExit(f"{path}:{number}: needs split train|test and a boolean is_harmful")
        rows.append(row)
    return rows


def rates(guard: OfflineGuard, rows: list[dict[str, object]]) -> dict[str, object]:
    decisions = [guard.parse(raw).status == "block" for raw in guard.screen([str(r["prompt"]) for r in rows])]
    harmful = [d for d, r in zip(decisions, rows, strict=True) if r["is_harmful"]]
    safe = [d for d, r in zip(decisions, rows, strict=True) if not r["is_harmful"]]
    return {
        "n": len(rows),
        "recall": sum(harmful) / len(harmful),
        "recall_interval_95": wilson_interval(sum(harmful), len(harmful)),
        "false_positive_rate": sum(safe) / len(safe),
        "false_positive_rate_interval_95": wilson_interval(sum(safe), len(safe)),
    }


def source_counts(guard: OfflineGuard, rows: list[dict[str, object]]) -> dict[str, int]:
    """Harmful and safe prompts of the separately written source, and how many of each were blocked."""
    blocked = [guard.parse(raw).status == "block" for raw in guard.screen([str(r["prompt"]) for r in rows])]
    counts: dict[str, int] = {}
    for kind, harmful in (("harmful", True), ("safe", False)):
        counts[f"{kind}_rows"] = sum(1 for r in rows if r["is_harmful"] is harmful)
        counts[f"{kind}_blocked"] = sum(
            1 for b, r in zip(blocked, rows, strict=True) if b and r["is_harmful"] is harmful
        )
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="Fit again and compare with the committed head.")
    parser.add_argument("--head", choices=("offline", "offline-kb"), default="offline", help="Which guard's head.")
    args = parser.parse_args()
    knowledge = load_knowledge() if args.head == "offline-kb" else None
    head_file = KB_HEAD_FILE if knowledge else HEAD_FILE
    feature_version = KB_FEATURE_VERSION if knowledge else FEATURE_VERSION
    rows = load_rows()
    train = [r for r in rows if r["split"] == "train"]
    embedder = minilm_embedder(ProviderOptions(model_cache=Path(".")))
    x = np.array(guard_features([str(r["prompt"]) for r in train], embedder, knowledge), dtype=float)
    y = np.array([1 if r["is_harmful"] else 0 for r in train])
    ids = [str(r["id"]) for r in train]
    head = fit_head(x, y, ids, ("safe", "harmful"), L2_GRID)
    oof = out_of_fold_probabilities(x, y, ids, float(head["l2"]))  # type: ignore[arg-type]
    threshold, cv_table, threshold_margin = choose_threshold(oof, y)
    head["threshold"] = threshold
    head["cv_recall_fpr_by_threshold"] = cv_table
    head["cv_threshold_smallest_margin"] = round(threshold_margin, 6)
    fresh: dict[str, Any] = {**provenance(feature_version, DATASET.name, ids), "risk": head}
    if args.check:
        committed = json.loads(head_file.read_text(encoding="utf-8")) if head_file.is_file() else {}
        old = committed.get("risk", {})
        problems = []
        if committed.get("fitted_on") != fresh["fitted_on"] or committed.get("feature_version") != feature_version:
            problems.append("fitted on other rows")
        elif old.get("threshold") != threshold:
            problems.append(f"threshold {old.get('threshold')} vs {threshold}")
        else:
            problems += compare_heads("risk", old, head, x, threshold)
        print(
            f"{head_file} differs from a fresh fit on the train split: {'; '.join(problems)}"
            if problems
            else "head matches a fresh fit"
        )
        return 1 if problems else 0
    print(
        f"L2 {head['l2']} (smallest margin of a cross-validated prediction {head['cv_smallest_margin']}), "
        f"threshold {threshold} (cross-validated at it: {cv_table[str(threshold)]}; smallest distance of an "
        f"out-of-fold probability to a candidate threshold {head['cv_threshold_smallest_margin']})"
    )
    guard = OfflineGuard(
        embedder, threshold=threshold, head=LogisticHead.from_json(head), knowledge=knowledge, head_file=head_file
    )
    fresh["measured_on_test_split"] = held_out_counts(guard, rows)
    separate = load_rows(SEPARATE_SOURCE, splits=("source-test",))
    fresh["measured_on_separate_source"] = source_counts(guard, separate)
    head_file.parent.mkdir(parents=True, exist_ok=True)
    head_file.write_text(json.dumps(fresh, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {head_file} (train rows {len(train)}); test split: {fresh['measured_on_test_split']}")
    print(f"train: {rates(guard, train)}")
    print(
        f"test, chit-chat apart: {rates(guard, [r for r in rows if r['split'] == 'test' and r['kind'] != 'chit-chat'])}"
    )
    print(f"separate source ({SEPARATE_SOURCE.name}, never fitted on): {rates(guard, separate)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
