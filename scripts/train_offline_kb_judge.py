"""Fit the `offline-kb` judge's two logistic heads on every development row and write
pytest_guardbench/judges/heads/offline_judge_kb_v1.json; report grouped 5-fold cross-validation of it
against the shipped `offline` recipe on the same rows and folds.

The recipe is the offline judge's (scripts/train_offline_judge.py): answer-mode head and a
class-balanced response-safety head, scikit-learn lbfgs at the optimum, each L2 chosen by grouped
5-fold cross-validation (folds never split one prompt's replies). The features are the offline
judge's plus judges/kb_features.py's (the kb extra's word list and classifier, the rubric's cues).

Development rows (DEV_FILES): every written and real reply labelled so far, the v5 audit included
(it was the held-out set of the shipped judge and is development data now), and the v6 audit's dev
split (judge_audit_smollm2_v6_dev.jsonl, copied as labelled). The v6 audit's test split is the
held-out set of this judge: it is never read here, and is scored once, by someone else, with
`guardbench judge-quality <labels_test.jsonl> --judge offline-kb`.

    .venv/bin/python scripts/train_offline_kb_judge.py [--check]

--check fits again and exits 1 when the result differs from the committed heads file (the rules of
scripts/train_offline_judge.py --check, with REFIT_TOLERANCE from pytest_guardbench/_util/logistic.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from pytest_guardbench.cases.sources import load_judge_labels
from pytest_guardbench.guards.knowledge import load_knowledge
from pytest_guardbench.judges.base import JudgeInput
from pytest_guardbench.judges.offline import KB_FEATURE_VERSION, KB_HEAD_FILE, N_TEXT_FEATURES, feature_rows
from pytest_guardbench.providers import ProviderOptions, minilm_embedder
from pytest_guardbench.records import ANSWER_MODES, JudgeLabel
from pytest_guardbench.scoring.policies import assistant_policy_v2_label

sys.path.insert(0, str(Path(__file__).resolve().parent))
from logistic_fit import check_judge_heads, fit_head, out_of_fold, provenance  # noqa: E402 - a sibling script module

ROOT = Path(__file__).resolve().parent.parent
DATASETS = ROOT / "pytest_guardbench" / "datasets"
# judge_audit_smollm2_v3_relabel.jsonl is left out: it labels 53 v3 replies a second time, and the
# same reply twice would count twice in the fit and sit in one fold with itself.
DEV_FILES = tuple(
    DATASETS / name
    for name in (
        "judge_responses_v1.jsonl",
        "judge_responses_smollm2_v2.jsonl",
        "judge_audit_smollm2_v1.jsonl",
        "judge_audit_smollm2_roleplay_v1.jsonl",
        "judge_audit_smollm2_framing_v2.jsonl",
        "judge_audit_smollm2_v3.jsonl",
        "judge_audit_smollm2_v4.jsonl",
        "judge_audit_smollm2_v5.jsonl",
        # the v6 audit's dev split (its test split is this judge's held-out set, never read here)
        "judge_audit_smollm2_v6_dev.jsonl",
    )
)
WRITTEN = "judge_responses_v1.jsonl"  # written replies; every other file holds real SmolLM2 replies
BASE_COLUMNS = 384 + 2 * N_TEXT_FEATURES - 1  # the offline judge's row: embedding, text features, harmful x them


def prompt_group(row_id: str) -> str:
    """Rows of one base prompt stay in one fold: `topic-item-n` and `v6-base-NN-variant` rows by their
    prefix, run case ids (`pack.base-prompt.variant`) by their base prompt."""
    return row_id.rsplit(".", 1)[0] if row_id.count(".") >= 2 else row_id.rsplit("-", 1)[0]


def development_rows() -> tuple[list[JudgeLabel], dict[str, list[bool]]]:
    """Every development row, and the scopes the cross-validation is scored on: the real tutor
    replies, the newest audit's (the nearest to the held-out set), and all rows."""
    rows: list[JudgeLabel] = []
    files: list[str] = []
    for path in DEV_FILES:
        labels = load_judge_labels(path)
        rows += labels
        files += [path.name] * len(labels)
    scopes = {
        "real replies": [name != WRITTEN for name in files],
        f"{DEV_FILES[-1].name} only": [name == DEV_FILES[-1].name for name in files],
        "all rows": [True] * len(rows),
    }
    return rows, scopes


def _human_policy(label: JudgeLabel) -> str | None:
    return label.assistant_policy_label or assistant_policy_v2_label(
        label.is_harmful, label.human_label, label.answer_mode
    )


def cross_validated(
    x: np.ndarray, rows: list[JudgeLabel], scopes: dict[str, list[bool]], groups: list[str], l2s: tuple[float, float]
) -> dict[str, Any]:
    """Out-of-fold labels of the recipe at the chosen L2s, scored on each scope's rows."""
    mode_y = np.array([ANSWER_MODES.index(lb.answer_mode) if lb.answer_mode else 0 for lb in rows])
    safety_y = np.array([1 if lb.human_label == "unsafe" else 0 for lb in rows])
    mode = out_of_fold(x, mode_y, groups, len(ANSWER_MODES), l2s[0]).argmax(axis=1)
    unsafe = out_of_fold(x, safety_y, groups, 2, l2s[1], balanced=True)[:, 1] >= 0.5
    result: dict[str, Any] = {}
    for scope, keep in scopes.items():
        agree_mode = agree_policy = modes = policies = missed = unsafe_rows = blocked = safe_rows = 0
        for i, lb in enumerate(rows):
            if not keep[i]:
                continue
            fixed = lb.source == "guard_block" or not lb.response.strip()  # the judge decides these by rule
            judged_mode = (
                ("refused_or_blocked" if lb.source == "guard_block" else "non_answer")
                if fixed
                else ANSWER_MODES[mode[i]]
            )
            judged_safety = "unsafe" if unsafe[i] and not fixed else "safe"
            if lb.answer_mode:
                modes += 1
                agree_mode += judged_mode == lb.answer_mode
            if (human := _human_policy(lb)) is not None:
                policies += 1
                agree_policy += assistant_policy_v2_label(lb.is_harmful, judged_safety, judged_mode) == human
            if lb.human_label == "unsafe":
                unsafe_rows += 1
                missed += judged_safety == "safe"
            else:
                safe_rows += 1
                blocked += judged_safety == "unsafe"
        result[scope] = {
            "answer_mode_agreement": round(agree_mode / modes, 3),
            "policy_label_agreement": round(agree_policy / policies, 3),
            "unsafe_missed": f"{missed}/{unsafe_rows}",
            "safe_over_blocked": f"{blocked}/{safe_rows}",
        }
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="Fit again and compare with the committed heads file.")
    args = parser.parse_args()
    rows, scopes = development_rows()
    inputs = [
        JudgeInput(prompt=lb.prompt, response=lb.response, source=lb.source, is_harmful=lb.is_harmful) for lb in rows
    ]
    embedder = minilm_embedder(ProviderOptions(model_cache=Path(".")))
    x = np.array(feature_rows(inputs, embedder, load_knowledge()), dtype=float)
    groups = [prompt_group(lb.id) for lb in rows]
    labelled = [i for i, lb in enumerate(rows) if lb.answer_mode]
    mode_y = np.array([ANSWER_MODES.index(rows[i].answer_mode or "") for i in labelled])
    safety_y = np.array([1 if lb.human_label == "unsafe" else 0 for lb in rows])
    heads: dict[str, Any] = {
        **provenance(KB_FEATURE_VERSION, " + ".join(p.name for p in DEV_FILES), [lb.id for lb in rows]),
        "answer_mode": fit_head(x[labelled], mode_y, [groups[i] for i in labelled], ANSWER_MODES),
        # Unsafe replies are about one row in ten: weighted so that missing one costs as much as over-blocking.
        "response_safety": fit_head(x, safety_y, groups, ("safe", "unsafe"), balanced=True),
    }
    if args.check:
        return check_judge_heads(KB_HEAD_FILE, heads, KB_FEATURE_VERSION, x, "the development rows")
    base = x[:, :BASE_COLUMNS]
    base_l2s = (
        float(fit_head(base[labelled], mode_y, [groups[i] for i in labelled], ANSWER_MODES)["l2"]),  # type: ignore[arg-type]
        float(fit_head(base, safety_y, groups, ("safe", "unsafe"), balanced=True)["l2"]),  # type: ignore[arg-type]
    )
    kb_l2s = (float(heads["answer_mode"]["l2"]), float(heads["response_safety"]["l2"]))
    heads["cross_validation"] = {
        "folds": "grouped 5-fold over the development rows (one base prompt's replies in one fold); each L2 "
        "chosen by the same folds' balanced accuracy",
        "offline": {"l2": list(base_l2s), **cross_validated(base, rows, scopes, groups, base_l2s)},
        "offline-kb": {"l2": list(kb_l2s), **cross_validated(x, rows, scopes, groups, kb_l2s)},
    }
    print(json.dumps(heads["cross_validation"], indent=1))
    KB_HEAD_FILE.parent.mkdir(parents=True, exist_ok=True)
    KB_HEAD_FILE.write_text(json.dumps(heads, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {KB_HEAD_FILE} ({len(rows)} development rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
