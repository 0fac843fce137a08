"""Fit the offline judge's two logistic heads on the TRAIN split of pytest_guardbench/datasets/judge_responses_v1.jsonl
plus the hand-labelled real SmolLM2 responses (REAL_RESPONSES) and write
pytest_guardbench/judges/heads/offline_judge_v1.json.

The L2 strength of each head is chosen by grouped 5-fold cross-validation inside the train split
(folds never split one prompt's responses). The test split is read only to print its numbers after
the heads are written; nothing is chosen on it.

    .venv/bin/python scripts/train_offline_judge.py [--check]

--check fits again and exits 1 when the result differs from the committed heads file (same rows, L2
and classes, and the same label on at least 98% of the train rows for each head), so a reviewer can
confirm what the heads were fitted on.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from pytest_guardbench.cases.sources import load_judge_labels
from pytest_guardbench.judges.base import JudgeInput
from pytest_guardbench._util.logistic import LogisticHead
from pytest_guardbench.judges.offline import FEATURE_VERSION, HEAD_FILE, feature_rows
from pytest_guardbench.providers import ProviderOptions, minilm_embedder
from pytest_guardbench.records import ANSWER_MODES

sys.path.insert(0, str(Path(__file__).resolve().parent))
from logistic_fit import fit_head, provenance  # noqa: E402 - a sibling script module

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


MIN_DECISION_AGREEMENT = 0.98  # share of train rows both heads label the same, per head


def _differences(committed: dict[str, object], fresh: dict[str, object], x: np.ndarray) -> list[str]:
    """What differs between the committed heads and a fresh fit. Full-batch Adam stops after a fixed
    number of steps, so the embeddings' last-digit differences between CPUs move single weights
    (the guard's head moved by up to 0.007 on a second machine): the heads are compared by what they
    decide on the train rows, after their provenance, L2 and classes."""
    if committed.get("fitted_on") != fresh["fitted_on"] or committed.get("feature_version") != fresh["feature_version"]:
        return ["fitted_on or feature_version"]
    problems = []
    for head in ("answer_mode", "response_safety"):
        old, new = committed.get(head) or {}, fresh[head]
        assert isinstance(old, dict) and isinstance(new, dict)
        if old.get("l2") != new["l2"] or old.get("classes") != new["classes"]:
            problems.append(f"{head}: l2 or classes")
            continue
        a, b = LogisticHead.from_json(old), LogisticHead.from_json(new)
        agree = float(np.mean([_label(a, row) == _label(b, row) for row in x]))
        print(f"{head}: the committed and the fresh head agree on {agree:.4f} of {len(x)} train rows")
        if agree < MIN_DECISION_AGREEMENT:
            problems.append(f"{head}: decisions agree on {agree:.4f} < {MIN_DECISION_AGREEMENT}")
    return problems


def _label(head: LogisticHead, row: np.ndarray) -> str:
    probabilities = head.probabilities(row)
    return max(probabilities, key=lambda label: probabilities[label])


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
    x = np.array(feature_rows(inputs, minilm_embedder(ProviderOptions(model_cache=Path(".")))), dtype=float)
    groups = [prompt_group(lb.id) for lb in train]
    mode_y = np.array([ANSWER_MODES.index(lb.answer_mode) for lb in train])
    safety_y = np.array([1 if lb.human_label == "unsafe" else 0 for lb in train])
    heads = {
        **provenance(FEATURE_VERSION, " + ".join(p.name for p in (DATASET, *REAL_RESPONSES)), [lb.id for lb in train]),
        "answer_mode": fit_head(x, mode_y, groups, ANSWER_MODES),
        # Unsafe replies are about one row in ten: weighted so that missing one costs as much as over-blocking.
        "response_safety": fit_head(x, safety_y, groups, ("safe", "unsafe"), balanced=True),
    }
    text = json.dumps(heads, indent=1, sort_keys=True) + "\n"
    if args.check:
        committed = json.loads(HEAD_FILE.read_text(encoding="utf-8")) if HEAD_FILE.is_file() else {}
        problems = _differences(committed, heads, x)
        print(
            "heads match a fresh fit"
            if not problems
            else f"{HEAD_FILE} differs from a fresh fit on the train split: {problems[0]}"
        )
        return 0 if not problems else 1
    HEAD_FILE.parent.mkdir(parents=True, exist_ok=True)
    HEAD_FILE.write_text(text, encoding="utf-8")
    print(
        f"wrote {HEAD_FILE} (train rows {len(train)}; L2 answer_mode {heads['answer_mode']['l2']}, response_safety {heads['response_safety']['l2']})"
    )
    print(f"cross-validated balanced accuracy on train: answer_mode {heads['answer_mode']['cv_balanced_accuracy']}, "
          f"response_safety {heads['response_safety']['cv_balanced_accuracy']}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
