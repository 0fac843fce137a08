"""`guardbench compare`: runs side by side (rows = runs, columns = variants, per metric); the work is
`results.compare`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


from pytest_guardbench._util.files import write_files
from pytest_guardbench.results.compare import compare, heatmap_html, long_csv, markdown
from pytest_guardbench.document.read import SummaryInvalid, iter_records, load_run, record_prompts
from pytest_guardbench.commands.exit_status import OK, USAGE_ERROR
from pytest_guardbench.errors import UsageError


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "compare",
        help="Put runs side by side: rows = runs, columns = variants, per metric; the corrected numbers when every "
        "run has them.",
    )
    command.add_argument("run_dirs", nargs="+", help="reports/<run-id> folders.")
    command.add_argument(
        "--name", action="append", default=[], help="Row name for each run, in order (default: guardrail/tutor/judge)."
    )
    command.add_argument(
        "--out", help="Folder for compare.csv (long form), compare.md and compare.html (default: print markdown only)."
    )
    command.add_argument(
        "--mixed-judges",
        action="store_true",
        help="Compare runs judged by different judges (different judge ids) with a warning, instead of refusing.",
    )
    command.add_argument(
        "--allow-different-cases",
        action="store_true",
        help="Compare runs that ran different cases on the cases they all share (the overlap is shown), "
        "instead of refusing.",
    )
    command.add_argument(
        "--allow-mixed-sources",
        action="store_true",
        help="Compare runs corrected by labels with judge-only runs, on every run's judge-only numbers (said so), "
        "instead of refusing.",
    )
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    dirs = [Path(d) for d in args.run_dirs]
    if args.name and len(args.name) != len(dirs):
        raise UsageError(f"{len(args.name)} --name for {len(dirs)} runs; give one per run or none")
    named = []
    for n, run_dir in enumerate(dirs):
        path = run_dir / "summary.json"
        if not path.is_file():
            raise UsageError(f"{run_dir} has no summary.json (expected a finished reports/<run-id> folder)")
        try:
            summary = load_run(run_dir)
        except SummaryInvalid as exc:
            missing = [".".join(map(str, e["loc"])) for e in exc.errors if e["type"] == "missing"]
            what = f"has no {', '.join(missing)}" if missing else f"does not read as a summary ({exc.errors[0]['msg']})"
            if "metric_definitions" in missing:
                what = "has no metric definitions"
            print(
                f"guardbench compare: {run_dir}: its summary.json {what} "
                "(written by an older pytest-guardbench?); re-score it first",
                file=sys.stderr,
            )
            return USAGE_ERROR
        stack = summary.stack
        default = "/".join("?" if role is None else role for role in (stack.guardrail, stack.tutor, stack.judge))
        named.append((args.name[n] if args.name else default, summary))
    if not args.name:  # the same stack twice (e.g. before and after a change): tell them apart by folder
        names = [name for name, _ in named]
        named = [
            (f"{name} ({d.name})" if names.count(name) > 1 else name, s)
            for (name, s), d in zip(named, dirs, strict=True)
        ]
    # Each run's case ids from its results.jsonl, each with its prompt's digest (the same id with another
    # prompt is another case); None where a run has none.
    case_ids = [record_prompts(d) if (d / "results.jsonl").is_file() else None for d in dirs]
    comparison = compare(
        named,
        mixed_judges=args.mixed_judges,
        case_ids=case_ids,
        allow_different_cases=args.allow_different_cases,
        records=lambda index: iter_records(dirs[index]),
        allow_mixed_sources=args.allow_mixed_sources,
    )
    for warning in comparison.warnings:
        print(f"guardbench compare: warning: {warning}", file=sys.stderr)
    text = markdown(comparison)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        # The three together, whole or none; an error names the file it failed on.
        write_files(
            [
                (out / "compare.csv", long_csv(comparison)),
                (out / "compare.md", text),
                (out / "compare.html", heatmap_html(comparison)),
            ]
        )
        print(f"wrote {out / 'compare.csv'}, {out / 'compare.md'}, {out / 'compare.html'}")
    print(text)
    return OK
