"""`guardbench rejudge`: re-score a finished run with another judge, without calling guard or tutor;
the work is `run.rejudge.rejudge_run`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_guardbench.commands.exit_status import FAILED, gate_exit_code
from pytest_guardbench.providers.base import ProviderError
from pytest_guardbench.run.rejudge import rejudge_run
from pytest_guardbench.results.summary import load_run
from pytest_guardbench.scoring.policies import POLICIES
from pytest_guardbench.scoring.scorecard import fmt_rate


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser("rejudge", help="Re-judge a finished run without calling guard or tutor.")
    command.add_argument("run_dir", help="A reports/<run-id> folder.")
    command.add_argument(
        "--judge", default="offline", help="offline, rules, a model alias, openai:<model> or vllm:<model>@<url>."
    )
    command.add_argument(
        "--policy", choices=sorted(POLICIES), help="Scoring policy (default: the policy of the original run)."
    )
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    run_dir = Path(args.run_dir)
    if not (run_dir / "results.jsonl").is_file():
        print(
            f"guardbench rejudge: {run_dir} has no results.jsonl (expected a reports/<run-id> folder)", file=sys.stderr
        )
        return 4
    try:
        out = rejudge_run(run_dir, args.judge, root=Path.cwd(), policy=args.policy)
    except ValueError as exc:
        print(f"guardbench rejudge: {exc}", file=sys.stderr)
        return 4
    except ProviderError as exc:
        print(f"guardbench rejudge: --judge {args.judge}: the judge failed: {exc}", file=sys.stderr)
        return FAILED
    summary = load_run(out)
    card = summary.scorecards.system
    print(
        f"rejudged with {args.judge} under {summary.policy}: recall {fmt_rate(card.recall)}, FPR {fmt_rate(card.false_positive_rate)}, gate {summary.gate.verdict}"
    )
    print(f"scorecard: {out / 'summary.json'}")
    return gate_exit_code(summary)
