"""Fit the offline guard's logistic head on the TRAIN split of pytest_guardbench/datasets/guard_prompts_v1.jsonl and
write pytest_guardbench/guards/heads/offline_guard_v1.json.

The test split (130 prompts) was committed before this script or any head existed. Everything is
chosen inside the train split: the L2 strength by 5-fold cross-validation (balanced accuracy), then
the threshold on the same folds' out-of-fold probabilities, by a rule fixed before any test number
was seen: the highest recall whose cross-validated false positive rate is at most 0.15 (a margin
under the 0.20 bar). The test split is read only to print its numbers after the head is written.

    .venv/bin/python scripts/train_offline_guard.py [--check]

--check fits again and exits 1 when the result differs from the committed head. Full-batch Adam
stops after a fixed number of steps, not at the optimum, so the embeddings' last-digit differences
between CPUs move single weights by up to about 0.01 (seen: 0.0067 on a second machine); the check
therefore compares what the heads decide on the train rows, not their weights.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from pytest_guardbench.scoring.agreement import wilson_interval
from pytest_guardbench.guards.offline_guard import FEATURE_VERSION, HEAD_FILE, OfflineGuard, guard_features
from pytest_guardbench._util.logistic import LogisticHead
from pytest_guardbench.providers import ProviderOptions, minilm_embedder

sys.path.insert(0, str(Path(__file__).resolve().parent))
from logistic_fit import fit_head, out_of_fold_probabilities, provenance  # noqa: E402 - a sibling script module

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT / "pytest_guardbench" / "datasets" / "guard_prompts_v1.jsonl"
L2_GRID = (0.1, 0.3, 1.0, 3.0, 10.0)
MAX_CV_FPR = 0.15
THRESHOLDS = tuple(round(0.30 + 0.05 * i, 2) for i in range(11))  # 0.30 ... 0.80


def choose_threshold(p: np.ndarray, y: np.ndarray) -> tuple[float, dict[str, dict[str, float]]]:
    table = {
        str(t): {"recall": round(float((p[y == 1] >= t).mean()), 4), "fpr": round(float((p[y == 0] >= t).mean()), 4)}
        for t in THRESHOLDS
    }
    allowed = [t for t in THRESHOLDS if table[str(t)]["fpr"] <= MAX_CV_FPR]
    best = max(allowed, key=lambda t: (table[str(t)]["recall"], -t)) if allowed else THRESHOLDS[-1]
    return best, table


def load_rows(path: Path = DATASET) -> list[dict[str, object]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        row = json.loads(line)
        if row.get("split") not in ("train", "test") or not isinstance(row.get("is_harmful"), bool):
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


MAX_PROBABILITY_GAP = 0.15  # largest |P(risk) committed - P(risk) fresh| on one train row
MIN_DECISION_AGREEMENT = 0.98  # share of train rows both heads block or both allow


def check_against_committed(head: dict[str, object], fresh: dict[str, object], x: np.ndarray) -> int:
    """0 when the committed head has the fresh fit's provenance, L2 and threshold and decides the
    train rows as it does; 1 (and what differs) otherwise."""
    committed = json.loads(HEAD_FILE.read_text(encoding="utf-8")) if HEAD_FILE.is_file() else {}
    old = committed.get("risk", {})
    problems = []
    if committed.get("fitted_on") != fresh["fitted_on"]:
        problems.append("fitted on other rows")
    if (old.get("l2"), old.get("threshold")) != (head["l2"], head["threshold"]):
        problems.append(f"L2/threshold {old.get('l2')}/{old.get('threshold')} vs {head['l2']}/{head['threshold']}")
    if not problems:
        threshold = float(head["threshold"])  # type: ignore[arg-type]
        p_old = np.array([LogisticHead.from_json(old).probabilities(row)["harmful"] for row in x])
        p_new = np.array([LogisticHead.from_json(head).probabilities(row)["harmful"] for row in x])
        gap = float(np.abs(p_old - p_new).max())
        agreement = float(((p_old >= threshold) == (p_new >= threshold)).mean())
        print(f"largest P(risk) gap {gap:.4f}, decisions agree on {agreement:.4f} of {len(x)} train rows")
        if gap > MAX_PROBABILITY_GAP or agreement < MIN_DECISION_AGREEMENT:
            problems.append(
                f"decisions differ (bars: gap <= {MAX_PROBABILITY_GAP}, agreement >= {MIN_DECISION_AGREEMENT})"
            )
    print(
        f"{HEAD_FILE} differs from a fresh fit on the train split: {'; '.join(problems)}"
        if problems
        else "head matches a fresh fit"
    )
    return 1 if problems else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="Fit again and compare with the committed head.")
    args = parser.parse_args()
    rows = load_rows()
    train = [r for r in rows if r["split"] == "train"]
    embedder = minilm_embedder(ProviderOptions(model_cache=Path(".")))
    x = np.array(guard_features([str(r["prompt"]) for r in train], embedder), dtype=float)
    y = np.array([1 if r["is_harmful"] else 0 for r in train])
    ids = [str(r["id"]) for r in train]
    head = fit_head(x, y, ids, ("safe", "harmful"), L2_GRID)
    threshold, cv_table = choose_threshold(out_of_fold_probabilities(x, y, ids, float(head["l2"])), y)  # type: ignore[arg-type]
    head["threshold"] = threshold
    head["cv_recall_fpr_by_threshold"] = cv_table
    fresh = {**provenance(FEATURE_VERSION, DATASET.name, ids), "risk": head}
    if args.check:
        return check_against_committed(head, fresh, x)
    HEAD_FILE.parent.mkdir(parents=True, exist_ok=True)
    HEAD_FILE.write_text(json.dumps(fresh, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(
        f"wrote {HEAD_FILE} (train rows {len(train)}, L2 {head['l2']}, threshold {threshold}; "
        f"cross-validated at it: {cv_table[str(threshold)]})"
    )
    guard = OfflineGuard(embedder, threshold=threshold, head=LogisticHead.from_json(head))
    for split in ("train", "test"):
        print(f"{split}: {rates(guard, [r for r in rows if r['split'] == split])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
