"""`guardbench audit`: label a sample of a finished run by hand, drawn by a design with known
inclusion probabilities (so `guardbench correct` can use the labels), or plan how many labels a
design needs; give a share of a first labeller's draw to a second labeller (`--overlap`), or settle
where two labellers disagree (`--adjudicate`). The sample is drawn by `audit.designs` and recorded by
`audit.draw_record`; the screens are `commands.audit_tui` and `commands.audit_adjudicate`."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from pytest_guardbench.audit.adjudication import LabelPair, check_replies, paired, settled_earlier, settled_row
from pytest_guardbench.audit.audit_file import check_resumable, first_draw, overlap_share
from pytest_guardbench.audit.draw_record import AuditDraw, draw_audit, population_of
from pytest_guardbench.audit.labels import HumanLabel, LabelsError, label_row, read_label_rows
from pytest_guardbench.audit.plan import MIN_HALF_WIDTH, plan_run
from pytest_guardbench.commands.audit_adjudicate import Adjudication, run_adjudication
from pytest_guardbench.commands.audit_tui import Labelling, run_audit
from pytest_guardbench.commands.exit_status import OK
from pytest_guardbench.document.read import load_records
from pytest_guardbench.errors import UsageError
from pytest_guardbench.records import AuditDesign, CaseRecord, JudgeLabel
from pytest_guardbench.results.frame import run_policy
from pytest_guardbench.runfolder.lock import refuse_unfinished
from pytest_guardbench.scoring.policies import ScoringPolicy
from pytest_guardbench.settings.option_values import MAX_CASES, at_most, positive, quoted, real_number


def _half_width(text: str) -> float:
    # From MIN_HALF_WIDTH: narrower asks for millions of labels, and past it the plan's arithmetic
    # leaves the floats (1e-160 squared is 0).
    said = f"must be a number from {MIN_HALF_WIDTH:g} to under 0.5, got {quoted(text)}"
    try:
        value = real_number(text)
    except ValueError:
        raise argparse.ArgumentTypeError(said) from None
    if not MIN_HALF_WIDTH <= value < 0.5:
        raise argparse.ArgumentTypeError(said)
    return value


def _share(text: str) -> float:
    try:
        value = real_number(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a share in (0, 1], got {quoted(text)}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be a share in (0, 1], got {quoted(text)}")
    return value


def _name(text: str) -> str:
    name = text.strip()
    if not name or len(name) > 80 or not name.isprintable():
        raise argparse.ArgumentTypeError(f"must be a name of 1 to 80 printable characters, got {quoted(text)}")
    return name


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "audit",
        help="Label a random or stratified sample of a finished run by hand (judge-labels JSONL), or plan its size; "
        "give a share of it to a second labeller, or settle where two labellers disagree.",
    )
    command.add_argument("run_dir", help="A reports/<run-id> folder.")
    command.add_argument(
        "--design",
        choices=("random", "stratified", "cluster", "debug"),
        help="random (default): uniform over the run's replies (each reply of a conversation on its own); "
        "stratified: prompt label x the judge's verdict, "
        "oversampling where the judge is likely wrong; cluster: uniform over the run's cases, every reply of a "
        "drawn conversation labelled, so conversations are corrected as conversations; all three record each "
        "row's inclusion probability, so guardbench correct can use them. debug: one case from each outcome x "
        "answer mode x variant in turn, to find failures fast; it cannot correct a scorecard.",
    )
    command.add_argument(
        "--sample",
        type=at_most(MAX_CASES, positive),
        help="Replies to label (default 50); cases, under --design cluster.",
    )
    command.add_argument(
        "--seed",
        type=int,
        default=0,
        help="Seed of the sample, or of the share with --overlap (default 0); the same seed gives the same cases.",
    )
    command.add_argument(
        "--labeller",
        type=_name,
        help="Your name or initials, written on every row you label or settle (required to label).",
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
        help=(
            f"Target half-width of the 95%% intervals for --plan (default 0.05; from {MIN_HALF_WIDTH:g} to under 0.5)."
        ),
    )
    command.add_argument(
        "--show-judge",
        action="store_true",
        help="Show the judge's labels before you answer (by default they appear only after, so they cannot sway you).",
    )
    command.add_argument(
        "--overlap",
        type=_share,
        metavar="SHARE",
        help="Label, as a second labeller, a seeded random SHARE (0 to 1) of the units drawn in the first labeller's "
        "file (--of), blind to the judge and to the first labeller.",
    )
    command.add_argument(
        "--of", metavar="FIRST", help="The first labeller's file for --overlap (default RUN_DIR/audit.jsonl)."
    )
    command.add_argument(
        "--adjudicate",
        nargs=2,
        metavar=("A", "B"),
        help="Settle the replies two labellings (a first labeller's file and a second labeller's) label differently; "
        "writes a settled row for every reply both labelled.",
    )
    command.add_argument(
        "--out",
        help="Labels file (default RUN_DIR/audit.jsonl; with --overlap FIRST's name with .overlap-LABELLER; with "
        "--adjudicate A's name with .settled); an existing one is resumed, its rows kept as they are.",
    )
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    run_dir = Path(args.run_dir)
    if not (run_dir / "results.jsonl").is_file():
        raise UsageError(f"{run_dir} has no results.jsonl (expected a reports/<run-id> folder)")
    _check_options(args)
    refuse_unfinished(run_dir, "audit it")
    records = load_records(run_dir)
    policy = run_policy(run_dir)
    if args.plan:
        return _plan(run_dir, records, policy, args.half_width)
    if args.labeller is None:
        raise UsageError("give --labeller NAME: your name or initials, written on every row you label or settle")
    if args.adjudicate:
        return _adjudicate(run_dir, records, policy, args)
    if args.overlap is not None:
        return _overlap(run_dir, records, policy, args)
    return _label(run_dir, records, policy, args)


def _check_options(args: argparse.Namespace) -> None:
    """Options that do not go together: one line naming them."""
    if args.overlap is not None and args.adjudicate:
        raise UsageError("--overlap and --adjudicate: give one of them")
    if args.of is not None and args.overlap is None:
        raise UsageError("--of names the first labeller's file of --overlap; give --overlap SHARE too")
    if (args.overlap is not None or args.adjudicate) and (args.design or args.sample or args.show_judge):
        given = [name for name, value in (("--design", args.design), ("--sample", args.sample)) if value]
        given += ["--show-judge"] if args.show_judge else []
        which = "--overlap" if args.overlap is not None else "--adjudicate"
        raise UsageError(
            f"{which} takes the first labeller's draw and is blind to the judge; leave out {', '.join(given)}"
        )


def _label(run_dir: Path, records: Sequence[CaseRecord], policy: ScoringPolicy, args: argparse.Namespace) -> int:
    out = _labels_out(args.out, run_dir / "audit.jsonl")
    design: AuditDesign = args.design or "random"
    earlier = read_label_rows(out)  # a corrupt labels file stops here, before any screen
    draw = draw_audit(records, design, args.sample or 50, args.seed, policy)
    if not draw.sample:
        raise UsageError(f"{run_dir} has no judged reply to label")
    check_resumable(out, earlier, draw)
    drawn = {record.case_id: unit for record, unit in draw.sample}

    def make_row(record: CaseRecord, label: HumanLabel) -> JudgeLabel:
        return label_row(
            record, label, policy, drawn[record.case_id], labeller=args.labeller, draw=draw.row_draw(record.case_id)
        )

    sample = [record for record, _ in draw.sample]
    run_audit(Labelling(sample, out, make_row, earlier, args.labeller, show_judge=args.show_judge))
    if design == "debug":
        print(f"measure a judge on it: guardbench judge-quality {out} --judge <name>")
    else:
        print(f"correct the run with it: guardbench correct {run_dir} --labels {out}")
        print(
            "a second labeller labels a share of it blind: "
            f"guardbench audit {run_dir} --overlap 0.4 --of {out} --labeller NAME"
        )
    return OK


def _labels_out(given: str | None, default: Path) -> Path:
    """The labels file to write, checked before any screen: its folder exists and it is no folder
    itself (else the first label saved would fail, naming a temporary file)."""
    out = Path(given) if given else default
    named = f"--out {out}" if given else str(out)
    if out.is_dir():
        raise UsageError(f"{named}: is a folder; name a labels file in it")
    if not out.parent.is_dir():
        raise UsageError(f"{named}: no such folder {out.parent}")
    return out


def _first_labelling(
    first: Path, records: Sequence[CaseRecord], policy: ScoringPolicy
) -> tuple[list[JudgeLabel], AuditDraw]:
    if first.is_dir():
        raise LabelsError(
            f"{first}: is a folder, not a labels file (the first labeller's, for --overlap; name it with --of)"
        )
    if not first.is_file():
        raise LabelsError(f"{first}: no such labels file (the first labeller's, for --overlap; name it with --of)")
    rows = read_label_rows(first)
    recorded = first_draw(first, rows)
    if recorded.design not in ("random", "stratified", "cluster", "debug"):
        raise LabelsError(f"{first}: drawn by the {recorded.design} design, which --overlap cannot draw again")
    draw = draw_audit(records, recorded.design, recorded.size, recorded.seed, policy)  # type: ignore[arg-type]
    if draw.recorded != recorded:
        raise LabelsError(
            f"{first}: drawn from another population ({'; '.join(recorded.differences(draw.recorded))}): "
            "its second labeller labels it on the run it was drawn from"
        )
    return rows, draw


def _overlap(run_dir: Path, records: Sequence[CaseRecord], policy: ScoringPolicy, args: argparse.Namespace) -> int:
    first = Path(args.of) if args.of else run_dir / "audit.jsonl"
    first_rows, draw = _first_labelling(first, records, policy)
    if args.labeller in {row.labeller for row in first_rows}:
        raise UsageError(f"--labeller {args.labeller} labelled {first}; a second labeller is another person")
    out = _labels_out(args.out, first.with_name(f"{first.stem}.overlap-{_slug(args.labeller)}.jsonl"))
    if out.resolve() == first.resolve():
        raise UsageError(f"--out {out} is the first labeller's file; give another")
    earlier = read_label_rows(out)
    share = overlap_share(first, draw, args.overlap, args.seed, out, earlier)
    by_id = {record.case_id: (record, unit) for record, unit in draw.sample}

    def make_row(record: CaseRecord, label: HumanLabel) -> JudgeLabel:
        return label_row(
            record,
            label,
            policy,
            by_id[record.case_id][1],
            labeller=args.labeller,
            draw=draw.row_draw(record.case_id),
            overlap=share.overlap,
        )

    sample = [by_id[unit][0] for unit in share.units]
    run_audit(Labelling(sample, out, make_row, earlier, args.labeller, blind=True))
    print(f"how far the two labellers agree: guardbench label-agreement {first} {out}")
    print(f"settle where they disagree: guardbench audit {run_dir} --adjudicate {first} {out} --labeller NAME")
    return OK


def _adjudicate(run_dir: Path, records: Sequence[CaseRecord], policy: ScoringPolicy, args: argparse.Namespace) -> int:
    first, second = (Path(name) for name in args.adjudicate)
    for path in (first, second):
        if path.is_dir():
            raise LabelsError(f"{path}: is a folder, not a labels file")
        if not path.is_file():
            raise LabelsError(f"{path}: no such labels file")
    pairs = paired(first, read_label_rows(first), second, read_label_rows(second))
    replies = _replies(records, policy)
    check_replies(pairs, replies, run_dir, first)
    out = _labels_out(args.out, first.with_name(f"{first.stem}.settled.jsonl"))
    if out.resolve() in (first.resolve(), second.resolve()):
        raise UsageError(f"--out {out} is one of the two files settled; give another")
    files = (str(first), str(second))
    earlier = settled_earlier(out, read_label_rows(out), files)

    def settle(pair: LabelPair, labels: tuple[str, str]) -> JudgeLabel:
        return settled_row(pair, labels, args.labeller, files)

    run_adjudication(Adjudication(pairs, out, settle, earlier))
    print(
        "correct the run with all three: "
        f"guardbench correct {run_dir} --labels {first} --labels {second} --labels {out}"
    )
    return OK


def _replies(records: Sequence[CaseRecord], policy: ScoringPolicy) -> dict[str, str]:
    """Each unit of the run (a judged reply, or a case with a reply) -> its reply's sha256."""
    found = {unit.unit_id: unit.reply_sha256 for unit in population_of(records, "debug", policy)}
    found.update({unit.unit_id: unit.reply_sha256 for unit in population_of(records, "random", policy)})
    return found


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-") or "second"


def _plan(run_dir: Path, records: Sequence[CaseRecord], policy: ScoringPolicy, half_width: float) -> int:
    plan, cases = plan_run(records, policy, half_width, where=str(run_dir))
    print(
        f"labels needed for 95% intervals of half-width {half_width:g} on system recall and FPR "
        f"({cases} cases; variance from {plan.variance_from}):"
    )
    for name, design in (("random", plan.random), ("stratified", plan.stratified)):
        print(
            f"  --design {name}: {design.total} labels "
            f"(recall alone {design.recall}, FPR alone {design.false_positive_rate})"
        )
    print("the intervals at small samples come out a little wider than planned: treat these as floors")
    return OK
