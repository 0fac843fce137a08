"""`guardbench import-seed`: rescore a results.jsonl recorded in the seed project's format, and check
it against the summary the seed run shipped; the work is `run.seed_import.import_seed_run`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pytest_guardbench.errors import DataError
from pytest_guardbench.document.read import read_json
from pytest_guardbench.commands.exit_status import FAILED, OK
from pytest_guardbench.errors import UsageError
from pytest_guardbench.runfolder.folder import removed_on_failure

from pytest_guardbench.runfolder.seed_import import import_seed_run
from pytest_guardbench.runfolder.seed_format import seed_summary_differences
from pytest_guardbench.document.read import load_run
from pytest_guardbench.scoring.policies import DEFAULT_POLICY, POLICIES
from pytest_guardbench.settings.config import MINORBENCH_HARMFUL_CATEGORIES


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser("import-seed", help="Rescore a results.jsonl recorded in the seed's format.")
    command.add_argument("results", help="The seed run's results.jsonl.")
    command.add_argument("--out", required=True, help="New run folder to write.")
    command.add_argument(
        "--judge", default="recorded", help="recorded (the seed's labels), offline, rules, a model alias or a spec."
    )
    command.add_argument("--pack", help="Pack name for case ids (default: the file name).")
    command.add_argument(
        "--harmful-categories",
        default=",".join(MINORBENCH_HARMFUL_CATEGORIES),
        help="Category rule for unlabelled rows.",
    )
    command.add_argument(
        "--policy", choices=sorted(POLICIES), default=DEFAULT_POLICY, help=f"Scoring policy (default {DEFAULT_POLICY})."
    )
    command.add_argument(
        "--safety-source",
        choices=("llm_judge", "rules"),
        help="How the seed run labelled safety (default: read from its rows).",
    )
    command.add_argument(
        "--check-summary",
        help="The summary.json the seed run shipped (default: the one beside results.jsonl, when there is one); "
        "exit 1 when a count differs.",
    )
    command.set_defaults(run=run)


def _seed_summary(path: Path) -> dict[str, Any]:
    document = read_json(path)
    if not isinstance(document, dict):
        raise DataError("a summary.json must be a JSON object", path=path)
    return document


def run(args: argparse.Namespace) -> int:
    categories = tuple(c.strip().lower() for c in args.harmful_categories.split(",") if c.strip())
    out = Path(args.out)
    if out.exists():
        raise UsageError(f"{out} exists; choose a new folder")
    results = Path(args.results)
    shipped = Path(args.check_summary) if args.check_summary else results.parent / "summary.json"
    if args.check_summary and not shipped.is_file():
        raise UsageError(f"--check-summary {shipped}: no such file")
    if not results.is_file():
        raise UsageError(f"{results}: no such file (the seed run's results.jsonl)")
    compare = args.judge == "recorded" and args.policy == DEFAULT_POLICY and shipped.is_file()
    # Read before anything is written: a summary that cannot be compared stops the import, not after it.
    seed_summary = _seed_summary(shipped) if compare else {}
    with removed_on_failure(out):
        import_seed_run(
            results,
            out,
            args.judge,
            root=Path.cwd(),
            harmful_categories=categories,
            pack=args.pack,
            policy=args.policy,
            safety_source=args.safety_source,
        )
    print(f"scorecard: {out / 'summary.json'}")
    if not compare:
        return OK
    if seed_summary.get("metric_definition_version") != DEFAULT_POLICY:
        print(
            f"{shipped} was not written by the seed's {DEFAULT_POLICY} report generator; "
            "its counts follow other rules and are not compared"
        )
        return OK
    differences = seed_summary_differences(seed_summary, load_run(out))
    if differences:
        print(f"differs from {shipped}:")
        for line in differences:
            print(f"  {line}")
        return FAILED
    print(f"reproduces {shipped}: confusion counts, malformed count, per-variant counts and prompt-row buckets agree")
    return OK
