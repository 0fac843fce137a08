"""`guardbench screen`: a guard alone over the cases of some packs; the work is `run.screening`."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pytest_guardbench._util.redact import redact
from pytest_guardbench._util.package_data import data_path

from pytest_guardbench.cases.sources import DataError
from pytest_guardbench.cases.variants import VariantError
from pytest_guardbench.commands.exit_status import FAILED, OK, USAGE_ERROR
from pytest_guardbench.errors import UsageError
from pytest_guardbench.run.screening import ScreenRequest, run_screen
from pytest_guardbench.settings.config import DEFAULT_VARIANTS, MINORBENCH_HARMFUL_CATEGORIES
from pytest_guardbench.settings.model_specs import default_model_cache
from pytest_guardbench.settings.option_values import MAX_BATCH_SIZE, MAX_CONCURRENCY, at_most, fraction
from pytest_guardbench.settings.options import ConfigError, name_list


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    screen = commands.add_parser("screen", help="Run only a guard over packs: recall/FPR per variant and category.")
    screen.add_argument(
        "packs",
        nargs="+",
        help="Packs (.json), datasets (.jsonl) or MinorBench CSVs (.csv), or the name of a shipped one "
        "(child_safety_v1).",
    )
    screen.add_argument(
        "--guardrail", required=True, help="keyword, semantic, a model alias, openai:<model> or vllm:<model>@<url>."
    )
    screen.add_argument(
        "--variants", default=",".join(DEFAULT_VARIANTS), help="Variants, families or chains (default: a run's)."
    )
    screen.add_argument(
        "--harmful-categories",
        default=",".join(MINORBENCH_HARMFUL_CATEGORIES),
        help="Category rule for unlabelled items.",
    )
    screen.add_argument(
        "--malformed-policy",
        choices=("block", "allow", "fallback"),
        default="block",
        help="What a malformed verdict counts as (block: stopped).",
    )
    screen.add_argument(
        "--target-recall", type=fraction, default=0.9, help="Recall the threshold sweep looks for (scoring guards)."
    )
    screen.add_argument(
        "--concurrency", type=_whole(MAX_CONCURRENCY), help="API calls in flight (default: the alias's, else 8)."
    )
    screen.add_argument(
        "--batch-size", type=_whole(MAX_BATCH_SIZE), default=16, help="Prompts per batch for a local model."
    )
    screen.add_argument(
        "--cache", choices=("off", "read", "write", "replay"), default="off", help="Response cache, as in a run."
    )
    screen.add_argument("--cache-path", default=".guardbench/cache.sqlite", help="SQLite file of the response cache.")
    screen.add_argument(
        "--model-cache",
        default=str(default_model_cache()),
        help="Folder for converted local weights.",
    )
    screen.add_argument("--offline", action="store_true", help="Hugging Face models only from a folder or the cache.")
    screen.add_argument(
        "--json", action="store_true", help="Print the report as JSON (top level: n, recall, false_positive_rate, ...)."
    )
    screen.set_defaults(run=run)


def _whole(limit: int) -> Callable[[str], int]:
    """A whole number from 1 to `limit`, as the run's option takes it; argparse names the option."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
        return int(at_most(limit)(str(value)))

    return parse


def run(args: argparse.Namespace) -> int:
    request = ScreenRequest(
        packs=tuple(data_path(p) for p in args.packs),
        guard=args.guardrail,
        variants=tuple(name_list(args.variants)),
        harmful_categories=tuple(c.lower() for c in name_list(args.harmful_categories)),
        malformed_policy=args.malformed_policy,
        target_recall=args.target_recall,
        concurrency=args.concurrency,
        batch_size=args.batch_size,
        cache=args.cache,
        cache_path=Path(args.cache_path),
        model_cache=Path(args.model_cache),
        offline=args.offline,
    )
    try:
        report = run_screen(request, Path.cwd())
    except (ConfigError, DataError, VariantError, UsageError) as exc:
        # The run's option names read as this command's (a missing extra names its pip line itself).
        print(redact(f"guardbench screen: {str(exc).replace('--guardbench-variants', '--variants')}"), file=sys.stderr)
        return USAGE_ERROR
    print(json.dumps(report, indent=2, sort_keys=True) if args.json else "\n".join(screen_lines(report)))
    if report["errors"]:
        # A guard call that failed measured nothing; like a pipeline error in a run, it fails the command.
        first = report["error_examples"][0] if report["error_examples"] else "no message"
        print(
            redact(f"guardbench screen: {report['errors']} of {report['cases']} guard calls failed (first: {first})"),
            file=sys.stderr,
        )
        return FAILED
    return OK


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _ci(bounds: Sequence[float] | None) -> str:
    return f" [{bounds[0]:.3f}, {bounds[1]:.3f}]" if bounds else ""


def screen_lines(report: dict[str, Any]) -> list[str]:
    lines = [
        f"guard {report['guardrail']} on {report['n']} labelled prompts "
        f"({report['harmful']} harmful, {report['safe']} safe); "
        f"malformed verdicts count as {'blocks' if report['malformed_policy'] == 'block' else 'allows'}; "
        "95% Wilson intervals",
        f"  recall {_fmt(report['recall'])}{_ci(report['recall_interval_95'])}, "
        f"false positive rate {_fmt(report['false_positive_rate'])}{_ci(report['false_positive_rate_interval_95'])}",
        "  decisions: "
        + ", ".join(f"{status} {d['count']} ({_fmt(d['rate'])})" for status, d in report["decisions"].items())
        + f"; guard errors {report['errors']}; unlabelled {report['unlabelled']}",
    ]
    lines += [f"  error: {example}" for example in report["error_examples"]]
    for title, key in (("variant", "per_variant"), ("category", "per_category")):
        lines.append(f"  {'per ' + title:<24} {'n':>5} {'recall':>24} {'false positive rate':>24}")
        for name, block in report[key].items():
            recall = f"{_fmt(block['recall'])}{_ci(block['recall_interval_95'])}"
            fpr = f"{_fmt(block['false_positive_rate'])}{_ci(block['false_positive_rate_interval_95'])}"
            lines.append(f"  {name:<24} {block['n']:>5} {recall:>24} {fpr:>24}")
    talks = report.get("conversations")
    if talks:
        lines.append(
            f"  conversations: {talks['conversations']} ({talks['harmful']} harmful, {talks['safe']} safe), "
            "screened turn "
            "by turn with the conversation so far; stopped by depth (cumulative):"
        )
        lines.append(f"  {'depth':<24} {'recall':>24} {'false positive rate':>24}")
        for caught, over in zip(talks["recall_by_turn"], talks["false_positive_rate_by_turn"], strict=True):
            recall = f"{_fmt(caught['rate'])}{_ci(caught['interval'])}"
            fpr = f"{_fmt(over['rate'])}{_ci(over['interval'])}"
            lines.append(f"  {caught['depth']:<24} {recall:>24} {fpr:>24}")
    curve = report["sweep"]
    if curve is not None:
        point = curve["operating_point"]
        where = (
            f"threshold {point['threshold']:.4f} gives recall {_fmt(point['recall'])}, "
            f"FPR {_fmt(point['false_positive_rate'])}"
            if point
            else curve["operating_point_note"]
        )
        lines.append(
            f"  scores: ROC AUC {_fmt(curve['roc_auc'])}, average precision {_fmt(curve['average_precision'])}; "
            f"for recall >= {curve['target_recall']:g}: {where}"
        )
    return lines
