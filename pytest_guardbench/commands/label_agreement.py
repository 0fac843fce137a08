"""`guardbench label-agreement`: how far two labellings of the same responses agree; the work is
`audit.agreement`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pytest_guardbench._util.redact import redact
from pytest_guardbench.cases.sources import load_judge_labels
from pytest_guardbench.audit.agreement import LabellingMismatch, labeller_agreement
from pytest_guardbench.commands.exit_status import OK, USAGE_ERROR
from pytest_guardbench.errors import UsageError
from pytest_guardbench.scoring.scorecard import fmt_rate


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "label-agreement",
        help="How far two labellings of the same responses agree (judge-labels JSONL): the ceiling for any judge.",
    )
    command.add_argument("first", help="Judge-labels JSONL (e.g. an audit).")
    command.add_argument("second", help="A second labelling of some of the same ids (another person, or later).")
    command.add_argument("--json", action="store_true", help="Print the full result as JSON.")
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        first, second = load_judge_labels(Path(args.first)), load_judge_labels(Path(args.second))
        result = labeller_agreement(first, second)
    except LabellingMismatch as exc:
        # The check speaks of "the first file"; the user named two paths.
        named = str(exc).replace("the first file", args.first).replace("the second file", args.second)
        where = "" if args.first in named or args.second in named else f"{args.first} and {args.second}: "
        print(redact(f"guardbench label-agreement: {where}{named}"), file=sys.stderr)
        return USAGE_ERROR
    if not result["shared_rows"]:
        raise UsageError(f"{args.first} and {args.second} share no id")
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
        return OK
    print(
        f"{result['shared_rows']} responses labelled in both files ({result['only_in_first']} only in the first, "
        f"{result['only_in_second']} only in the second); 95% Wilson intervals in brackets:"
    )
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
    return OK
