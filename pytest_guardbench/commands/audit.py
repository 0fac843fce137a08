"""`guardbench audit`: label a sample of a finished run by hand, drawn by a design with known
inclusion probabilities (so `guardbench correct` can use the labels), or plan how many labels a
design needs. The sample is drawn by `audit.designs`, the labelling screen is `commands.audit_tui`."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from pytest_guardbench.commands.audit_tui import run_audit
from pytest_guardbench.commands.exit_status import OK
from pytest_guardbench.errors import UsageError
from pytest_guardbench.records import CaseRecord
from pytest_guardbench.audit.units import audit_units
from pytest_guardbench.audit.designs import draw_design
from pytest_guardbench.audit.plan import judge_probability
from pytest_guardbench.audit.labels import read_labels
from pytest_guardbench.document.read import load_records
from pytest_guardbench.results.frame import run_policy
from pytest_guardbench.audit.plan import plan_audit
from pytest_guardbench.scoring.policies import ScoringPolicy
from pytest_guardbench.settings.option_values import positive


def _half_width(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 0.5), got {text!r}") from None
    if not 0 < value < 0.5:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 0.5), got {text}")
    return value


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "audit",
        help="Label a random or stratified sample of a finished run by hand (judge-labels JSONL), or plan its size.",
    )
    command.add_argument("run_dir", help="A reports/<run-id> folder.")
    command.add_argument(
        "--design",
        choices=("random", "stratified", "debug"),
        default="random",
        help="random (default): uniform over the run's judged replies (each reply of a conversation on its own); "
        "stratified: prompt label x the judge's verdict, "
        "oversampling where the judge is likely wrong; both record each row's inclusion probability, so "
        "guardbench correct can use them. debug: one case from each outcome x answer mode x variant in turn, "
        "to find failures fast; it cannot correct a scorecard.",
    )
    command.add_argument("--sample", type=positive, default=50, help="Cases to label (default 50).")
    command.add_argument(
        "--seed", type=int, default=0, help="Seed of the sample (default 0); the same seed gives the same cases."
    )
    command.add_argument(
        "--plan",
        action="store_true",
        help="Print how many labels each design needs for --half-width on system recall and FPR, then exit.",
    )
    command.add_argument(
        "--half-width",
        type=_half_width,
        default=0.05,
        help="Target half-width of the 95%% intervals for --plan (default 0.05).",
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
        raise UsageError(f"{run_dir} has no results.jsonl (expected a reports/<run-id> folder)")
    out = Path(args.out) if args.out else run_dir / "audit.jsonl"
    records = load_records(run_dir)
    policy = run_policy(run_dir)
    if args.plan:
        return _plan(records, policy, args.half_width)
    read_labels(out)  # a corrupt labels file stops here, before any screen
    sample = draw_design(records, args.design, args.sample, args.seed, policy)
    if not sample:
        raise UsageError(f"{run_dir} has no judged reply to label")
    drawn = {record.case_id: unit for record, unit in sample if unit is not None}
    run_audit([record for record, _ in sample], out, policy, show_judge=args.show_judge, drawn=drawn)
    if args.design == "debug":
        print(f"measure a judge on it: guardbench judge-quality {out} --judge <name>")
    else:
        print(f"correct the run with it: guardbench correct {run_dir} --labels {out}")
    return OK


def _plan(records: Sequence[CaseRecord], policy: ScoringPolicy, half_width: float) -> int:
    units = audit_units(records, policy)
    probability = {u.unit_id: p for r, u in units if (p := judge_probability(r, policy)) is not None}
    plan = plan_audit([u for _, u in units], half_width, judge_probability=probability or None)
    print(
        f"labels needed for 95% intervals of half-width {half_width:g} on system recall and FPR "
        f"({len(units)} judged cases; variance from {plan.variance_from}):"
    )
    for name, design in (("random", plan.random), ("stratified", plan.stratified)):
        print(
            f"  --design {name}: {design.total} labels (recall alone {design.recall}, FPR alone {design.false_positive_rate})"
        )
    print("the intervals at small samples come out a little wider than planned: treat these as floors")
    return OK
