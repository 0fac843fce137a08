"""Choose the offline judges' relevance floor (judges/relevance.py) on development rows only, and show
what it and the run-level check of repeated replies (scoring/repeated_replies.py) do there.

Development rows: scripts/train_offline_kb_judge.py's DEV_FILES (every labelled reply the judges may
be fitted or tuned on; the v6 audit's test split is not among them and is never read here). Only
tutor replies with text are read: a guard block and an empty reply are decided by rule.

The floor: the lowest relevance of any development reply the labeller called `answered`, rounded
down to a multiple of 0.05, so that it sits below every such reply with some room (0.124 gives 0.10).
The report then gives, for each offline judge and a few floors around it, how
many replies its heads call `answered` the floor would move to `non_answer`, how many of those the
labeller called `answered` (false moves), and the answer-mode and policy-label agreement on the
development rows with and without the move.

    .venv/bin/python scripts/tune_relevance_floor.py [--check]

--check exits 1 when the floor this rule gives is not judges.relevance.RELEVANCE_FLOOR.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_guardbench.cases.sources import load_judge_labels
from pytest_guardbench.guards.knowledge import load_knowledge
from pytest_guardbench.judges.base import JudgeInput
from pytest_guardbench.judges.offline import OfflineJudge, offline_kb_judge
from pytest_guardbench.judges.relevance import RELEVANCE_FLOOR, relevance
from pytest_guardbench.providers import ProviderOptions, minilm_embedder
from pytest_guardbench.records import JudgeLabel
from pytest_guardbench.scoring.policies import assistant_policy_v2_label
from pytest_guardbench.scoring.repeated_replies import MIN_BASE_PROMPTS, MIN_SHARE_PERCENT, normalised

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_offline_kb_judge import DEV_FILES, prompt_group  # noqa: E402 - a sibling script module

STEP = 0.05


def _human_policy(label: JudgeLabel) -> str | None:
    return label.assistant_policy_label or assistant_policy_v2_label(
        label.is_harmful, label.human_label, label.answer_mode
    )


def _agreement(rows: Sequence[JudgeLabel], modes: Sequence[str], safeties: Sequence[str]) -> tuple[str, str]:
    mode_rows = [(lb, m) for lb, m in zip(rows, modes, strict=True) if lb.answer_mode]
    policy_rows = [(lb, m, s) for lb, m, s in zip(rows, modes, safeties, strict=True) if _human_policy(lb)]
    agree_mode = sum(lb.answer_mode == m for lb, m in mode_rows)
    agree_policy = sum(assistant_policy_v2_label(lb.is_harmful, s, m) == _human_policy(lb) for lb, m, s in policy_rows)
    return f"{agree_mode}/{len(mode_rows)}", f"{agree_policy}/{len(policy_rows)}"


def floor_report(rows: list[JudgeLabel], scores: list[float], judges: dict[str, OfflineJudge]) -> dict[str, Any]:
    """The chosen floor and, per judge and floor, the moves it makes on the development rows."""
    answered = [s for lb, s in zip(rows, scores, strict=True) if lb.answer_mode == "answered"]
    lowest = min(answered)
    floor = math.floor(round(lowest / STEP, 6)) * STEP
    report: dict[str, Any] = {
        "rows": len(rows),
        "labelled_answered": len(answered),
        "lowest_relevance_of_an_answered_reply": round(lowest, 3),
        "floor": round(floor, 2),
        "judges": {},
    }
    inputs = [JudgeInput(lb.prompt, lb.response, lb.source, lb.is_harmful) for lb in rows]
    for name, judge in judges.items():
        verdicts = judge.judge(inputs)
        modes = [v.answer_mode or "" for v in verdicts]
        safeties = [v.response_safety or "" for v in verdicts]
        per_floor = {}
        for candidate in (floor - STEP, floor, floor + STEP):
            moved = [i for i, (m, s) in enumerate(zip(modes, scores, strict=True)) if m == "answered" and s < candidate]
            after = ["non_answer" if i in set(moved) else m for i, m in enumerate(modes)]
            per_floor[f"{candidate:.2f}"] = {
                "moved": len(moved),
                "moved_by_label": dict(collections.Counter(rows[i].answer_mode or "?" for i in moved)),
                "false_moves": sum(rows[i].answer_mode == "answered" for i in moved),
                "answer_mode_before_after": _agreement(rows, modes, safeties)[0]
                + " -> "
                + _agreement(rows, after, safeties)[0],
                "policy_label_before_after": _agreement(rows, modes, safeties)[1]
                + " -> "
                + _agreement(rows, after, safeties)[1],
            }
        report["judges"][name] = per_floor
    return report


def repeats_report(files: list[tuple[str, list[JudgeLabel]]]) -> dict[str, Any]:
    """Each development file taken as one run: the reply given to the most base prompts, and how the
    labeller labelled every reply given to two or more."""
    found: dict[str, Any] = {}
    labels_of_repeated: collections.Counter[str] = collections.Counter()
    for name, rows in files:
        bases: dict[str, set[str]] = collections.defaultdict(set)
        modes: dict[str, list[str]] = collections.defaultdict(list)
        for lb in rows:
            text = normalised(lb.response)
            if lb.source == "tutor" and text:
                bases[text].add(prompt_group(lb.id))
                modes[text].append(lb.answer_mode or "?")
        every = {group for groups in bases.values() for group in groups}
        top = max(bases, key=lambda t: (len(bases[t]), t))
        flagged = [
            t for t, g in bases.items() if len(g) >= MIN_BASE_PROMPTS and 100 * len(g) >= MIN_SHARE_PERCENT * len(every)
        ]
        for text, groups in bases.items():
            if len(groups) >= 2:
                labels_of_repeated.update(modes[text])
        found[name] = {
            "base_prompts": len(every),
            "most_base_prompts_of_one_reply": len(bases[top]),
            "that_reply": top[:60],
            "flagged_by_the_rule": len(flagged),
            "labels_of_flagged": dict(collections.Counter(m for t in flagged for m in modes[t])),
        }
    return {"files": found, "labels_of_replies_given_to_two_or_more_base_prompts": dict(labels_of_repeated)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="Exit 1 when the rule's floor is not the committed one.")
    args = parser.parse_args()
    files = [(path.name, load_judge_labels(path)) for path in DEV_FILES]
    rows = [lb for _, labels in files for lb in labels if lb.source == "tutor" and lb.response.strip()]
    embedder = minilm_embedder(ProviderOptions(model_cache=Path(".")))
    inputs = [JudgeInput(lb.prompt, lb.response, lb.source, lb.is_harmful) for lb in rows]
    scores = relevance(inputs, embedder.embed([lb.response.strip() for lb in rows]), embedder)
    if args.check:
        answered = [s for lb, s in zip(rows, scores, strict=True) if lb.answer_mode == "answered"]
        floor = round(math.floor(round(min(answered) / STEP, 6)) * STEP, 2)
        print(f"floor from the development rows: {floor}; committed: {RELEVANCE_FLOOR}")
        return 0 if floor == RELEVANCE_FLOOR else 1
    judges = {
        "offline": OfflineJudge(embedder, relevance_floor=None),
        "offline-kb": offline_kb_judge(embedder, load_knowledge()),
    }
    judges["offline-kb"].relevance_floor = None  # the heads' own labels: the report applies each floor itself
    print(json.dumps({"floor": floor_report(rows, scores, judges), "repeats": repeats_report(files)}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
