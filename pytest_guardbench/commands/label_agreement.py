"""`guardbench label-agreement`: how far two labellings of the same responses agree; the work is
`audit.agreement`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pytest_guardbench._util.redact import redact
from pytest_guardbench.cases.sources import load_judge_labels
from pytest_guardbench.audit.agreement import DOMAINS, FIELDS, LabellingMismatch, labeller_agreement
from pytest_guardbench.commands.exit_status import OK, USAGE_ERROR
from pytest_guardbench.errors import UsageError
from pytest_guardbench.scoring.scorecard import fmt_rate


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "label-agreement",
        help="How far two labellings of the same responses agree (judge-labels JSONL), per field and prompt domain, "
        "with Cohen's kappa: the ceiling for any judge.",
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
    names = result["labellers"]
    named = names["first"] or names["second"]
    who = f" ({', '.join(names['first']) or 'unnamed'} and {', '.join(names['second']) or 'unnamed'})" if named else ""
    print(
        f"{result['shared_rows']} responses labelled in both files{who} ({result['only_in_first']} only in the "
        f"first, {result['only_in_second']} only in the second); 95% intervals in brackets:"
    )
    for scope, fields in (("all prompts", result), *((f"{d} prompts", result["domains"][d]) for d in DOMAINS)):
        print(f"  {scope}:")
        for name in FIELDS:
            print(f"    {name.replace('_', ' ')}: {_field_text(fields[name])}")
    for row in result["disagreements"]:
        print(
            f"  {row['unit']} ({row['domain'] or 'unlabelled'} prompt): {'/'.join(map(str, row['first']))} vs "
            f"{'/'.join(map(str, row['second']))}"
        )
    return OK


def _bounds(bounds: list[float] | tuple[float, float] | None) -> str:
    return f" [{bounds[0]:.3f}, {bounds[1]:.3f}]" if bounds else ""


def _field_text(part: dict[str, Any]) -> str:
    """`agreement 0.688 [0.444, 0.858], kappa 0.375 [-0.120, 0.720] over 16 rows`."""
    if not part["rows"]:
        return "no rows"
    kappa = part["cohen_kappa"]
    said = (
        "undefined (one label on both sides)" if kappa is None else f"{kappa:.3f}{_bounds(part['kappa_interval_95'])}"
    )
    return (
        f"agreement {fmt_rate(part['agreement'])}{_bounds(part['agreement_interval_95'])}, kappa {said} "
        f"over {part['rows']} rows"
    )
