"""`guardbench merge`: merge the run folders of a sharded run into one run; the work is
`runfolder.merge.merge_runs`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_guardbench._util.redact import redact
from pytest_guardbench.commands.exit_status import FAILED, gate_exit_code
from pytest_guardbench.commands.label_options import add_label_options, carried_lines
from pytest_guardbench.errors import UsageError
from pytest_guardbench.runfolder.folder import removed_on_failure
from pytest_guardbench.runfolder.merge import merge_runs
from pytest_guardbench.document.read import load_run
from pytest_guardbench.results.terminal import incomplete_lines


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser("merge", help="Merge the run folders of a sharded run into one run.")
    command.add_argument("run_dirs", nargs="+", help="reports/<run-id> folders, one per shard.")
    command.add_argument("--out", required=True, help="New run folder to write.")
    add_label_options(command, "merged")
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if out.exists():
        raise UsageError(f"{out} exists; choose a new folder")
    with removed_on_failure(out):
        merge_runs(
            [Path(d) for d in args.run_dirs],
            out,
            labels=[Path(path) for path in args.labels or ()],
            drop_labels=args.no_labels,
        )
    summary = load_run(out)
    print(f"merged {summary.coverage.expected} cases; gate {summary.gate.verdict}")
    for line in carried_lines([load_run(Path(d)) for d in args.run_dirs], summary):
        print(line)
    for line in incomplete_lines(summary, "INCOMPLETE RUN: "):
        print(line)
    for crash in summary.run.worker_crashes:
        print(redact(f"guardbench merge: a shard's {crash}"), file=sys.stderr)
    for error in summary.run.internal_errors:
        print(redact(f"guardbench merge: a shard's internal error: {error}"), file=sys.stderr)
    print(f"scorecard: {out / 'summary.json'}")
    # A shard whose run had internal errors failed as a run (exit 1): so does the merge of it.
    return FAILED if summary.run.internal_errors and summary.gate.passed else gate_exit_code(summary)
