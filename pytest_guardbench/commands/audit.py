"""`guardbench audit`: label a stratified sample of a finished run by hand; the sample is drawn by
`results.audit`, the labelling screen is `commands.audit_tui`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_guardbench.commands.audit_tui import run_audit
from pytest_guardbench.results.audit import draw_sample
from pytest_guardbench.results.summary import load_records, run_policy


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "audit", help="Label a stratified sample of a finished run by hand (judge-labels JSONL)."
    )
    command.add_argument("run_dir", help="A reports/<run-id> folder.")
    command.add_argument(
        "--sample",
        type=int,
        default=50,
        help="Cases to label (default 50), one from each outcome x answer mode x variant in turn.",
    )
    command.add_argument(
        "--seed", type=int, default=0, help="Seed of the sample (default 0); the same seed gives the same cases."
    )
    command.add_argument(
        "--show-judge",
        action="store_true",
        help="Show the judge's labels before you answer (by default they appear only after, so they cannot sway you).",
    )
    command.add_argument("--out", help="Labels file (default RUN_DIR/audit.jsonl); an existing one is resumed.")
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    run_dir = Path(args.run_dir)
    if not (run_dir / "results.jsonl").is_file():
        print(f"guardbench audit: {run_dir} has no results.jsonl (expected a reports/<run-id> folder)", file=sys.stderr)
        return 4
    try:
        records = load_records(run_dir)
    except ValueError as exc:
        print(f"guardbench audit: {exc}", file=sys.stderr)
        return 4
    policy = run_policy(run_dir)
    sample = draw_sample(records, args.sample, args.seed, policy)
    if not sample:
        print(f"guardbench audit: {run_dir} has no case with a final response to label", file=sys.stderr)
        return 4
    out = Path(args.out) if args.out else run_dir / "audit.jsonl"
    run_audit(sample, out, policy, show_judge=args.show_judge)
    print(f"measure a judge on it: guardbench judge-quality {out} --judge <name>")
    return 0
