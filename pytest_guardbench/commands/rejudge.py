"""`guardbench rejudge`: re-score a finished run with another judge, without calling guard or tutor;
the work is `run.rejudge.rejudge_run`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_guardbench._util.redact import redact
from pytest_guardbench.commands.exit_status import FAILED, gate_exit_code
from pytest_guardbench.commands.label_options import add_label_options, carried_lines
from pytest_guardbench.errors import UsageError
from pytest_guardbench.providers.base import ProviderError
from pytest_guardbench.runfolder.rejudge import rejudge_run
from pytest_guardbench.document.read import load_run
from pytest_guardbench.scoring.policies import POLICIES
from pytest_guardbench.scoring.scorecard import fmt_rate
from pytest_guardbench.settings.options import OPTIONS_BY_NAME


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser("rejudge", help="Re-judge a finished run without calling guard or tutor.")
    command.add_argument("run_dir", help="A reports/<run-id> folder.")
    command.add_argument(
        "--judge", default="offline", help="offline, rules, a model alias, openai:<model> or vllm:<model>@<url>."
    )
    command.add_argument(
        "--policy", choices=sorted(POLICIES), help="Scoring policy (default: the policy of the original run)."
    )
    command.add_argument(
        "--judge-samples",
        type=OPTIONS_BY_NAME["judge_samples"].parse,  # the run option's bounds
        default=1,
        help="Ask the judge k times per response and take the strict majority; the new summary's "
        "coverage.judge_disagreement is the share of verdicts whose k answers disagreed (default 1).",
    )
    add_label_options(command, "rejudged")
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    run_dir = Path(args.run_dir)
    if not (run_dir / "results.jsonl").is_file():
        raise UsageError(f"{run_dir} has no results.jsonl (expected a reports/<run-id> folder)")
    try:
        out = rejudge_run(
            run_dir,
            args.judge,
            root=Path.cwd(),
            policy=args.policy,
            samples=args.judge_samples,
            labels=[Path(path) for path in args.labels or ()],
            drop_labels=args.no_labels,
        )
    except ProviderError as exc:
        print(redact(f"guardbench rejudge: --judge {args.judge}: the judge failed: {exc}"), file=sys.stderr)
        return FAILED
    summary = load_run(out)
    card = summary.scorecards.system
    print(
        f"rejudged with {args.judge} under {summary.policy}: recall {fmt_rate(card.recall)}, "
        f"FPR {fmt_rate(card.false_positive_rate)}, gate {summary.gate.verdict}"
    )
    split = summary.coverage.judge_disagreement
    if split is not None:
        print(f"judge self-consistency: the answers disagreed on {split.count} verdict(s) ({fmt_rate(split.rate)})")
    for line in carried_lines(load_run(run_dir) if (run_dir / "summary.json").is_file() else None, summary):
        print(line)
    print(f"judge id {summary.judge_id}: compare with runs whose judge id is the same")
    print(f"scorecard: {out / 'summary.json'}")
    return gate_exit_code(summary)
