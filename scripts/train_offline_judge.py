"""Fit the offline judge's two logistic heads on the TRAIN split of pytest_guardbench/datasets/judge_responses_v1.jsonl
plus the hand-labelled real SmolLM2 responses (REAL_RESPONSES) and write
pytest_guardbench/judges/heads/offline_judge_v1.json.

Each head is a logistic regression fitted to its optimum by scikit-learn (scripts/logistic_fit.py);
its L2 strength is chosen by grouped 5-fold cross-validation inside the train split (folds never
split one prompt's responses). The test split is read only after the heads are fitted, to record
their counts on it in the heads file (a test re-measures them); nothing is chosen on it.

    .venv/bin/python scripts/train_offline_judge.py [--check]

--check fits again and exits 1 when the result differs from the committed heads file: other train
rows, another L2 or other classes, a probability further than REFIT_TOLERANCE (1e-4) from the
committed head's on any train row, or a different label on a train row that is not within that
tolerance of a boundary. The tolerance is derived in pytest_guardbench/_util/logistic.py: refits
with embeddings from other CPU kernels, disturbed features, shuffled rows or other thread counts
moved these heads by at most 1.1e-6 (6.9e-7 from the CPU kernels), and changed no decision.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from pytest_guardbench._util.logistic import LogisticHead
from pytest_guardbench.cases.sources import load_judge_labels
from pytest_guardbench.judges.base import JudgeInput
from pytest_guardbench.judges.quality import measure_judge_quality
from pytest_guardbench.judges.offline import FEATURE_VERSION, HEAD_FILE, OfflineJudge, feature_rows
from pytest_guardbench.providers import ProviderOptions, minilm_embedder
from pytest_guardbench.records import ANSWER_MODES, JudgeLabel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from logistic_fit import check_judge_heads, fit_head, provenance  # noqa: E402 - a sibling script module

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT / "pytest_guardbench" / "datasets" / "judge_responses_v1.jsonl"
# Real tutor output (SmolLM2), every row a train row: responses to the base prompts and variants the
# framing audit left out, and every audit measured before the v5 one (development sets since then).
# The held-out set for this fit is pytest_guardbench/datasets/judge_audit_smollm2_v5.jsonl (new prompts), never read here.
REAL_RESPONSES = (
    ROOT / "pytest_guardbench" / "datasets" / "judge_responses_smollm2_v2.jsonl",
    ROOT / "pytest_guardbench" / "datasets" / "judge_audit_smollm2_framing_v2.jsonl",
    ROOT / "pytest_guardbench" / "datasets" / "judge_audit_smollm2_v3.jsonl",
    ROOT / "pytest_guardbench" / "datasets" / "judge_audit_smollm2_v4.jsonl",
    ROOT / "pytest_guardbench" / "datasets" / "judge_audit_smollm2_v1.jsonl",
    ROOT / "pytest_guardbench" / "datasets" / "judge_audit_smollm2_roleplay_v1.jsonl",
)


def prompt_group(row_id: str) -> str:
    """Rows of one prompt stay in one cross-validation fold: `topic-item-n` rows by their prefix, run
    case ids (`pack.base-prompt.variant`) by their base prompt."""
    return row_id.rsplit(".", 1)[0] if row_id.count(".") >= 2 else row_id.rsplit("-", 1)[0]


def held_out_counts(judge: OfflineJudge, test: list[JudgeLabel]) -> dict[str, int]:
    """The counts behind the README's test-split row, recorded in the heads file and re-measured by
    tests/unit/judges/test_offline_judge.py."""
    result = measure_judge_quality(judge, test, min_kappa=0.6)
    unsafe = sum(1 for label in test if label.human_label == "unsafe")
    counts = {"rows": len(test), "unsafe_rows": unsafe, "safe_rows": len(test) - unsafe}
    for key, rate, rows in (
        ("answer_mode_agreeing", "answer_mode_agreement", result["answer_mode_rows"]),
        ("policy_label_agreeing", "policy_label_agreement", result["policy_label_rows"]),
        ("safety_agreeing", "agreement", len(test)),
        ("unsafe_missed", "miss_rate", unsafe),
        ("safe_over_blocked", "over_block_rate", len(test) - unsafe),
    ):
        counts[key] = round(result[rate] * rows)  # each rate is a count over its rows
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="Fit again and compare with the committed heads file.")
    args = parser.parse_args()
    labels = load_judge_labels(DATASET)
    if any(label.split not in ("train", "test") for label in labels):
        print(f"{DATASET}: every row needs split train or test", file=sys.stderr)
        return 4
    train = [label for label in labels if label.split == "train"]
    train += [label for path in REAL_RESPONSES for label in load_judge_labels(path)]
    inputs = [
        JudgeInput(prompt=lb.prompt, response=lb.response, source=lb.source, is_harmful=lb.is_harmful) for lb in train
    ]
    embedder = minilm_embedder(ProviderOptions(model_cache=Path(".")))
    x = np.array(feature_rows(inputs, embedder), dtype=float)
    groups = [prompt_group(lb.id) for lb in train]
    mode_y = np.array([ANSWER_MODES.index(lb.answer_mode) for lb in train])
    safety_y = np.array([1 if lb.human_label == "unsafe" else 0 for lb in train])
    heads: dict[str, Any] = {
        **provenance(FEATURE_VERSION, " + ".join(p.name for p in (DATASET, *REAL_RESPONSES)), [lb.id for lb in train]),
        "answer_mode": fit_head(x, mode_y, groups, ANSWER_MODES),
        # Unsafe replies are about one row in ten: weighted so that missing one costs as much as over-blocking.
        "response_safety": fit_head(x, safety_y, groups, ("safe", "unsafe"), balanced=True),
    }
    if args.check:
        return check_judge_heads(HEAD_FILE, heads, FEATURE_VERSION, x, "the train split")
    for name in ("answer_mode", "response_safety"):
        head = heads[name]
        print(
            f"{name}: L2 {head['l2']}, cross-validated balanced accuracy {head['cv_balanced_accuracy']}, "
            f"smallest margin of a cross-validated prediction {head['cv_smallest_margin']}"
        )
    judge = OfflineJudge(
        embedder,
        heads=(LogisticHead.from_json(heads["answer_mode"]), LogisticHead.from_json(heads["response_safety"])),
    )
    heads["measured_on_test_split"] = held_out_counts(judge, [label for label in labels if label.split == "test"])
    HEAD_FILE.parent.mkdir(parents=True, exist_ok=True)
    HEAD_FILE.write_text(json.dumps(heads, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {HEAD_FILE} (train rows {len(train)}); test split: {heads['measured_on_test_split']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
