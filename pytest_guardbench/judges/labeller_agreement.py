"""How well two labellings of the same responses agree (two people, or one person twice): the ceiling
any judge's measured agreement with either labelling can be read against. Pure arithmetic."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_guardbench.scoring.agreement import cohen_kappa, pair_agreement
from pytest_guardbench.cases.sources import DataError, load_judge_labels
from pytest_guardbench.scoring.policies import assistant_policy_v2_label
from pytest_guardbench.records import JudgeLabel
from pytest_guardbench.scoring.scorecard import fmt_rate


class LabellingMismatch(DataError):
    """The two files do not label the same responses."""


def _share(pairs: Sequence[tuple[object, object]]) -> dict[str, Any]:
    shared = pair_agreement(pairs)
    return {"rows": shared["rows"], "agreement": shared["agreement"], "agreement_interval_95": shared["interval_95"]}


def _policy(label: JudgeLabel) -> str | None:
    return label.assistant_policy_label or assistant_policy_v2_label(
        label.is_harmful, label.human_label, label.answer_mode
    )


def _repeated_id(labels: Sequence[JudgeLabel]) -> str | None:
    seen: set[str] = set()
    for label in labels:
        if label.id in seen:
            return label.id
        seen.add(label.id)
    return None


def labeller_agreement(first: Sequence[JudgeLabel], second: Sequence[JudgeLabel]) -> dict[str, Any]:
    """Agreement on safety (with kappa), answer mode and policy label over the ids both files hold.
    Rows of one file whose id the other lacks are counted, not compared; a shared id whose prompt or
    response differs is an error, since the two labels would not be of the same thing."""
    for which, labels in (("first", first), ("second", second)):
        if (twice := _repeated_id(labels)) is not None:
            raise LabellingMismatch(f"the {which} file labels id {twice} twice")
    by_id = {label.id: label for label in second}
    shared = [(label, by_id[label.id]) for label in first if label.id in by_id]
    changed = [a.id for a, b in shared if (a.prompt, a.response) != (b.prompt, b.response)]
    if changed:
        raise LabellingMismatch(f"{len(changed)} shared ids label different text, first: {changed[0]}")
    safety = [(a.human_label, b.human_label) for a, b in shared]
    modes = [(a.answer_mode, b.answer_mode) for a, b in shared if a.answer_mode and b.answer_mode]
    policy = [(_policy(a), _policy(b)) for a, b in shared if _policy(a) and _policy(b)]
    return {
        "shared_rows": len(shared),
        "only_in_first": len(first) - len(shared),
        "only_in_second": len(second) - len(shared),
        "safety": {**_share(safety), "cohen_kappa": cohen_kappa(safety)},
        "answer_mode": _share(modes),
        "policy_label": _share(policy),
        "disagreements": [
            {"id": a.id, "first": [a.human_label, a.answer_mode], "second": [b.human_label, b.answer_mode]}
            for a, b in shared
            if (a.human_label, a.answer_mode) != (b.human_label, b.answer_mode)
        ],
    }


def _run(args: argparse.Namespace) -> int:
    try:
        first, second = load_judge_labels(Path(args.first)), load_judge_labels(Path(args.second))
        result = labeller_agreement(first, second)
    except (DataError, LabellingMismatch) as exc:
        print(f"guardbench label-agreement: {exc}", file=sys.stderr)
        return 4
    if not result["shared_rows"]:
        print(f"guardbench label-agreement: {args.first} and {args.second} share no id", file=sys.stderr)
        return 4
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
        return 0
    print(f"{result['shared_rows']} responses labelled in both files ({result['only_in_first']} only in the first, "
          f"{result['only_in_second']} only in the second); 95% Wilson intervals in brackets:")  # fmt: skip
    for name in ("safety", "answer_mode", "policy_label"):
        part = result[name]
        bounds = part["agreement_interval_95"]
        interval = f" [{bounds[0]:.3f}, {bounds[1]:.3f}]" if bounds else ""
        kappa = f", kappa {fmt_rate(part['cohen_kappa'])}" if "cohen_kappa" in part else ""
        print(
            f"  {name.replace('_', ' ')}: agreement {fmt_rate(part['agreement'])}{interval} over {part['rows']} rows{kappa}"
        )
    for row in result["disagreements"]:
        print(f"  {row['id']}: {'/'.join(map(str, row['first']))} vs {'/'.join(map(str, row['second']))}")
    return 0


def add_parser(commands: Any) -> None:
    command = commands.add_parser(
        "label-agreement",
        help="How far two labellings of the same responses agree (judge-labels JSONL): the ceiling for any judge.",
    )
    command.add_argument("first", help="Judge-labels JSONL (e.g. an audit).")
    command.add_argument("second", help="A second labelling of some of the same ids (another person, or later).")
    command.add_argument("--json", action="store_true", help="Print the full result as JSON.")
    command.set_defaults(run=_run)
