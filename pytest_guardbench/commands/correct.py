"""`guardbench correct`: correct a finished run's scorecards with a person's labels of its own replies;
the work is `runfolder.correct.correct_run_folder`."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pytest_guardbench.commands.exit_status import gate_exit_code
from pytest_guardbench.errors import UsageError
from pytest_guardbench.results.corrected import correction_lines
from pytest_guardbench.runfolder.correct import correct_run_folder
from pytest_guardbench.document.correction import corrected_document
from pytest_guardbench.runfolder.finish import LABELS_WARNING
from pytest_guardbench.runfolder.lock import refuse_unfinished
from pytest_guardbench.audit.label_files import load_run_labels
from pytest_guardbench.settings.option_values import kappa


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "correct",
        help="Correct a finished run's recall and FPR with labels of a random or stratified sample of its replies.",
    )
    command.add_argument("run_dir", help="A reports/<run-id> folder.")
    command.add_argument(
        "--labels",
        required=True,
        action="append",
        help="Judge-labels JSONL whose ids are the run's case ids (guardbench audit writes one); repeat it for a "
        "second labeller's file (audit --overlap) and the settled rows (audit --adjudicate): a settled row is used "
        "where one exists, else the first file's.",
    )
    command.add_argument(
        "--design",
        choices=("random", "stratified"),
        help="How the labelled cases were drawn, for labels made outside guardbench audit (its rows say it).",
    )
    command.add_argument(
        "--min-kappa",
        type=kappa,
        default=0.6,
        help="The judge's kappa on these labels below which the run is LOW CONFIDENCE.",
    )
    command.add_argument("--json", action="store_true", help="Print corrected.json instead of the text summary.")
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    run_dir = Path(args.run_dir)
    if not (run_dir / "results.jsonl").is_file():
        raise UsageError(f"{run_dir}: not a finished run folder (no results.jsonl)")
    refuse_unfinished(run_dir, "correct it")
    labels = load_run_labels([Path(path) for path in args.labels], args.design)
    summary = correct_run_folder(run_dir, labels, args.min_kappa)
    assert summary.corrected is not None
    if args.json:
        print(json.dumps(corrected_document(summary.corrected), indent=2, sort_keys=True))
        return gate_exit_code(summary)
    for line in correction_lines(summary.corrected):
        print(line)
    for warning in summary.warnings:
        if warning.startswith(LABELS_WARNING):
            print(f"warning: {warning}")
    if summary.confidence is not None and summary.confidence.level == "low":
        print(f"LOW CONFIDENCE: {summary.confidence.reason}")
    undecided = [c.message for c in summary.gate.checks if c.status != "pass"]
    print(f"gate {summary.gate.verdict}" + (": " + "; ".join(undecided) if undecided else ""))
    print(f"written: {run_dir / 'corrected.json'} (summary.json, summary.md and report.html rewritten)")
    return gate_exit_code(summary)
