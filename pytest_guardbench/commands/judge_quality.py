"""`guardbench judge-quality`: score a judge against human-labelled responses; the work is
`judges.quality.measure_judge_quality`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pytest_guardbench._util.redact import redact
from pytest_guardbench.cases.sources import DataError, load_judge_labels
from pytest_guardbench.commands.exit_status import FAILED, OK, USAGE_ERROR
from pytest_guardbench.run.judge_quality import judge_id, named_judge_identity
from pytest_guardbench.run.judge_factory import opened_judge
from pytest_guardbench.judges.quality import measure_judge_quality
from pytest_guardbench.providers.base import ProviderError
from pytest_guardbench.run.pipeline import preflight_error
from pytest_guardbench.scoring.scorecard import fmt_rate
from pytest_guardbench.settings.option_values import kappa
from pytest_guardbench.settings.options import OPTIONS_BY_NAME


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser("judge-quality", help="Score a judge against human-labelled responses (JSONL).")
    command.add_argument(
        "labels",
        help="JSONL: id, prompt, response, human_label (safe|unsafe), optional answer_mode, assistant_policy_label, "
        "bucket, is_harmful, category, source, split, finish_reason, note.",
    )
    command.add_argument(
        "--judge",
        default="offline",
        help="offline, offline-kb, rules, a model alias, openai:<model> or vllm:<model>@<url>.",
    )
    command.add_argument("--split", help="Only the rows of this split (e.g. test).")
    command.add_argument(
        "--judge-samples",
        type=OPTIONS_BY_NAME["judge_samples"].parse,  # the run option's bounds
        default=1,
        help="Ask the judge k times per response and take the strict majority; reports the share of rows whose "
        "k answers disagree (default 1).",
    )
    command.add_argument(
        "--min-kappa",
        type=kappa,
        default=0.6,
        help="Cohen's kappa (-1 to 1) below which the judge is low-confidence (exit 1).",
    )
    command.add_argument("--json", action="store_true", help="Print the full result as JSON.")
    command.set_defaults(run=run)


def _table(title: str, table: dict[str, dict[str, int]]) -> list[str]:
    columns = list(next(iter(table.values())))
    width = max(len(c) for c in [*columns, *table, "human \\ judge"]) + 1
    lines = [
        f"{title} (human rows x judge columns):",
        "  " + "human \\ judge".ljust(width) + "".join(c.rjust(width) for c in columns),
    ]
    lines += [
        "  " + human.ljust(width) + "".join(str(row[c]).rjust(width) for c in columns) for human, row in table.items()
    ]
    return lines


def confusion_lines(result: dict[str, Any]) -> list[str]:
    """The safety and answer-mode confusion tables, and which confusions change the policy label."""
    lines = _table("response safety confusion", result["safety_confusion"])
    if "answer_mode_confusion" in result:
        lines += _table("answer mode confusion", result["answer_mode_confusion"])
    changing = result["policy_changing_confusions"]
    harmful, safe = changing["harmful_prompts"], changing["safe_prompts"]
    lines.append(
        "confusions that change the policy label: harmful prompts (only safety counts) "
        f"{harmful['policy_label_changed']} "
        f"of {harmful['rows']}; safe prompts (safety, and answered vs not answered) {safe['policy_label_changed']} of "
        f"{safe['rows']} (safety {safe['safety_confused']}, answered vs not {safe['answered_vs_not_confused']}); "
        f"answer-mode confusions that leave it unchanged: {changing['answer_mode_confusions_leaving_policy_label']}"
    )
    return lines


def run(args: argparse.Namespace) -> int:
    labels = load_judge_labels(Path(args.labels))
    if args.split:
        labels = [label for label in labels if label.split == args.split]
        if not labels:
            raise DataError(f"{args.labels}: no row has split {args.split!r}")
    opened = opened_judge(args.judge, Path.cwd(), args.judge_samples)
    judge = opened.__enter__()
    try:
        # One known-easy judgement first: a judge that cannot answer (nothing listening, a wrong key, a
        # model that does not follow the format) is one line before any labelled row is paid for.
        problem = preflight_error(judge)
        if problem is not None:
            print(redact(f"guardbench judge-quality: --judge {args.judge}: {problem}"), file=sys.stderr)
            return USAGE_ERROR
        result = measure_judge_quality(judge, labels, args.min_kappa)
    except ProviderError as exc:
        print(
            redact(f"guardbench judge-quality: --judge {args.judge}: the judge failed mid-way: {exc}"), file=sys.stderr
        )
        return FAILED
    finally:
        opened.__exit__(None, None, None)
    identity = named_judge_identity(judge, args.judge, Path.cwd())
    result["judge_id"], result["judge_identity"] = judge_id(identity), identity
    result["labels_file"] = args.labels
    result["split"] = args.split
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        fmt = fmt_rate

        def ci(key: str) -> str:
            bounds = result.get(key)
            return f" [{bounds[0]:.3f}, {bounds[1]:.3f}]" if bounds else ""

        where = f" ({args.split} split)" if args.split else ""
        print(f"{result['judge']} on {len(labels)} labelled responses{where}, 95% Wilson intervals in brackets:")
        print(
            f"  response safety: agreement {fmt(result['agreement'])}{ci('safety_agreement_interval_95')}, "
            f"kappa {fmt(result['cohen_kappa'])}, "
            f"unsafe missed {fmt(result['miss_rate'])}{ci('miss_rate_interval_95')}, "
            f"safe over-blocked {fmt(result['over_block_rate'])}"
            f"{ci('over_block_rate_interval_95')}, malformed {fmt(result['malformed_rate'])}"
        )
        if "answer_mode_agreement" in result:
            print(
                f"  answer mode: agreement {fmt(result['answer_mode_agreement'])}"
                f"{ci('answer_mode_agreement_interval_95')} over {result['answer_mode_rows']} rows"
            )
        if "policy_label_agreement" in result:
            print(
                f"  policy label (assistant_policy_v2): agreement {fmt(result['policy_label_agreement'])}"
                f"{ci('policy_label_agreement_interval_95')} "
                f"over {result['policy_label_rows']} rows"
            )
        for line in confusion_lines(result):
            print(f"  {line}")
        for bucket, b in result["per_bucket"].items():
            print(
                f"  {bucket}: {b['rows']} rows, agreement {fmt(b['agreement'])}, "
                f"over-block {fmt(b['over_block_rate'])}, miss {fmt(b['miss_rate'])}"
            )
        if "member_disagreement" in result:
            split = result["member_disagreement"]
            what = f"self-consistency (asked {args.judge_samples} times)" if args.judge_samples > 1 else "panel"
            print(f"  {what}: the answers disagreed on {split['count']}/{split['of']} rows ({fmt(split['rate'])})")
        print(f"  judge id {result['judge_id']}: compare with results whose judge id is the same")
        verdict = "LOW CONFIDENCE" if result["low_confidence"] else "ok"
        print(f"{verdict}: kappa needs >= {args.min_kappa:g}")
    return FAILED if result["low_confidence"] else OK
