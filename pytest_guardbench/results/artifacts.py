"""Run artifacts under reports/<run-id>/ and the terminal lines. Writes files; never prints.

summary.json keeps everything that depends on time or the run id under the top-level "run" key, so
two runs over the same input differ only there.
"""

from __future__ import annotations

import csv
import io
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from collections.abc import Sequence
from typing import Any

from pytest_guardbench.scoring.gates import GateResult
from pytest_guardbench.results.summary import SUMMARY_SCHEMA_VERSION, RunSummary
from pytest_guardbench.scoring.scorecard import fmt_rate

CARD_COLUMNS = (
    "n", "tp", "fp", "tn", "fn", "harmful_support", "safe_support", "precision", "recall", "f1",
    "false_positive_rate", "false_negative_rate", "balanced_error_rate", "overall_success_rate",
    "harmful_prompt_success_rate", "safe_prompt_success_rate",
    "harmful_prompt_unsafe_answer_rate", "safe_prompt_overrefusal_rate",
)  # fmt: skip


def _write_json(path: Path, payload: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


FLIP_COLUMNS = ("guard_flip_rate", "outcome_flip_rate", "became_mishandled", "became_handled")


def variant_rows(summary: RunSummary) -> list[dict[str, Any]]:
    rows = []
    for variant, cards in summary.per_variant.items():
        flips = summary.flip_rates.get(variant, {})
        for scope, card in cards.items():
            rows.append(
                {
                    "variant": variant,
                    "family": summary.variant_families.get(variant, ""),
                    "scope": scope,
                    **{c: card[c] for c in CARD_COLUMNS},
                    **{c: flips.get(c) for c in FLIP_COLUMNS},
                }
            )
    return rows


def variant_csv(summary: RunSummary) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(
        buffer, fieldnames=("variant", "family", "scope", *CARD_COLUMNS, *FLIP_COLUMNS), lineterminator="\n"
    )
    writer.writeheader()
    for row in variant_rows(summary):
        writer.writerow({k: "" if v is None else v for k, v in row.items()})
    return buffer.getvalue()


def _md_table(rows: list[tuple[str, dict[str, Any]]]) -> list[str]:
    columns = ("n", "tp", "fp", "tn", "fn", "recall", "false_positive_rate", "balanced_error_rate", "f1", "precision")
    lines = ["| scope | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for name, card in rows:
        lines.append(f"| {name} | " + " | ".join(fmt_rate(card[c]) for c in columns) + " |")
    return lines


def summary_markdown(summary: RunSummary) -> str:
    gate = summary.gate
    definitions = summary.metric_definitions
    system = summary.scorecards["system"]
    stack = summary.stack
    lines = [
        f"# guardbench run {summary.run['run_id']}",
        "",
        f"Stack: guardrail `{stack['guardrail']}`, tutor `{stack['tutor']}`, judge `{stack['judge']}`, "
        f"malformed policy `{stack['malformed_policy']}`.",
        "",
        f"Scoring policy `{definitions['policy']}` (version {definitions['policy_version']}): a harmful prompt is handled correctly when "
        f"{definitions['harmful_prompt_correct_when']}; a safe prompt when {definitions['safe_prompt_correct_when']}. "
        "TP/FN = harmful prompts handled correctly/wrongly, TN/FP = safe prompts handled correctly/wrongly.",
        "",
        f"Harmful prompt success {fmt_rate(system['harmful_prompt_success_rate'])}, safe prompt success {fmt_rate(system['safe_prompt_success_rate'])}, "
        f"safe prompt over-refusal {fmt_rate(system['safe_prompt_overrefusal_rate'])}, harmful prompt unsafe answers "
        f"{fmt_rate(system['harmful_prompt_unsafe_answer_rate'])}, overall success {fmt_rate(system['overall_success_rate'])}.",
        "",
        f"**Gate: {gate.verdict.upper()}**",
        "",
        *(line + "\n" for line in incomplete_lines(summary, "**INCOMPLETE RUN**: ")),
        *(line + "\n" for line in resume_lines(summary)),
    ]
    marks = {"pass": "ok", "fail": "FAIL", "inconclusive": "UNDECIDED"}
    lines += [f"- {marks[c.status]}: {c.message}" for c in gate.checks]
    lines += ["", "## Scorecards", ""]
    lines += _md_table(list(summary.scorecards.items()))
    lines += ["", "## Per variant (system)", ""]
    lines += _md_table([(v, cards["system"]) for v, cards in summary.per_variant.items()])
    lines += ["", "## Per mutator family (system)", ""]
    lines += _md_table([(f, cards["system"]) for f, cards in summary.per_family.items()])
    if summary.flip_rates:
        lines += [
            "",
            "## Flip rate against original",
            "",
            "| variant | guard flips | outcome flips | became mishandled | became handled |",
            "|---|---|---|---|---|",
        ]
        for variant, f in summary.flip_rates.items():
            lines.append(
                f"| {variant} | {fmt_rate(f['guard_flip_rate'])} ({f['guard_flips']}/{f['guard_pairs']}) | {fmt_rate(f['outcome_flip_rate'])} "
                f"| {f['became_mishandled']} | {f['became_handled']} |"
            )
    lines += ["", "## Per category (system)", ""]
    lines += _md_table([(c, cards["system"]) for c, cards in summary.per_category.items()])
    cov = summary.coverage
    lines += [
        "",
        "## Coverage",
        "",
        f"expected {cov['expected']}, scored {cov['scored']['count']}, unlabelled {cov['unlabelled']['count']}, "
        f"errored {cov['errored']['count']}, judge malformed {cov['malformed_judge']['count']}, judge labels incomplete "
        f"{cov['incomplete_judge']['count']}, missing {cov['missing']['count']}, tutor ran on {cov['tutor_evaluable']['count']}.",
    ]
    buckets = summary.prompt_row_buckets
    lines += [
        "",
        "## Prompt-row buckets",
        "",
        f"{buckets['rows']} rows: fully correct {buckets['fully_correct']['count']}, partially incorrect "
        f"{buckets['partially_incorrect']['count']}, consistently incorrect {buckets['consistently_incorrect']['count']}.",
    ]
    if summary.guard_decisions:
        lines += ["", "## Guardrail decisions", ""]
        for guard, split in summary.guard_decisions.items():
            for label, rates in split.items():
                lines.append(
                    f"- {guard} / {label} (n={rates['n']}): allow {fmt_rate(rates['allow']['rate'])}, block {fmt_rate(rates['block']['rate'])}, "
                    f"malformed {fmt_rate(rates['malformed']['rate'])}"
                )
    for guard, result in summary.guard_sweeps.items():
        point = result["operating_point"]
        at = (
            f"threshold {point['threshold']:.4g} gives recall {fmt_rate(point['recall'])} at FPR {fmt_rate(point['false_positive_rate'])}"
            if point
            else result["operating_point_note"]
        )
        lines += [
            "",
            f"## Guard threshold sweep: {guard}",
            "",
            f"{result['n']} scored cases ({result['positives']} harmful): ROC AUC {fmt_rate(result['roc_auc'])}, "
            f"average precision {fmt_rate(result['average_precision'])}; for recall >= {result['target_recall']:g}, {at}.",
        ]
    usage = summary.run.get("usage")
    if usage:
        lines += ["", "## Time and tokens", "", "| stage | cases | p50 s | p95 s | total s |", "|---|---|---|---|---|"]
        for stage, t in usage["stages"].items():
            lines.append(
                f"| {stage} | {t['cases']} | {fmt_rate(t['p50_s'])} | {fmt_rate(t['p95_s'])} | {t['total_s']:.1f} |"
            )
        tokens = usage["tutor_tokens"]
        cost = "unknown" if usage["tutor_cost_usd"] is None else f"${usage['tutor_cost_usd']:.4f}"
        note = f" ({usage['cost_note']})" if usage["cost_note"] else ""
        lines += ["", f"Tutor: {tokens['answers']} answers, prompt tokens {tokens['prompt_tokens'] if tokens['prompt_tokens'] is not None else 'unknown'}, "
                  f"completion tokens {tokens['completion_tokens'] if tokens['completion_tokens'] is not None else 'unknown'}, cost {cost}{note}."]  # fmt: skip
    quality = summary.judge_quality
    if quality and "error" not in quality:
        lines += ["", f"## Judge quality ({quality['labels_file']})", "",
                  f"{quality['judge']}: agreement {fmt_rate(quality['agreement'])}, Cohen's kappa {fmt_rate(quality['cohen_kappa'])}, "
                  f"over-block {fmt_rate(quality['over_block_rate'])}, miss {fmt_rate(quality['miss_rate'])}, malformed {fmt_rate(quality['malformed_rate'])} "
                  f"over {quality['rows']} labelled responses.", ""]  # fmt: skip
        if "answer_mode_agreement" in quality:
            lines += [
                f"Answer mode agreement {fmt_rate(quality['answer_mode_agreement'])} over {quality['answer_mode_rows']} rows.",
                "",
            ]
        if "policy_label_agreement" in quality:
            lines += [
                f"Policy label agreement {fmt_rate(quality['policy_label_agreement'])} over {quality['policy_label_rows']} rows.",
                "",
            ]
        lines += ["| bucket | rows | agreement | over-block | miss |", "|---|---|---|---|---|"]
        for bucket, b in quality["per_bucket"].items():
            lines.append(
                f"| {bucket} | {b['rows']} | {fmt_rate(b['agreement'])} | {fmt_rate(b['over_block_rate'])} | {fmt_rate(b['miss_rate'])} |"
            )
    confidence = summary.confidence
    if confidence and confidence["level"] == "low":
        lines += ["", f"**Low-confidence scorecard:** {confidence['reason']}."]
    if summary.warnings:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in summary.warnings]
    return "\n".join(lines) + "\n"


def write_meta(run_dir: Path, meta: dict[str, Any]) -> None:
    _write_json(run_dir / "meta.json", meta)


def merge_counts(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Add up per-process counters (nested dicts of numbers); `lowest_*` keys keep the minimum and
    strings (a mode, a path) keep the first value seen."""
    merged: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if isinstance(value, dict):
                merged[key] = merge_counts([merged.get(key, {}), value])
            elif isinstance(value, bool) or not isinstance(value, int | float):
                merged.setdefault(key, value)
            elif key.startswith("lowest") and key in merged:
                merged[key] = min(merged[key], value)
            else:
                merged[key] = merged.get(key, 0) + value
    return merged


def write_all(run_dir: Path, summary: RunSummary, manifest: dict[str, Any], meta: dict[str, Any]) -> dict[str, Path]:
    paths = {
        "summary.json": run_dir / "summary.json",
        "summary.md": run_dir / "summary.md",
        "variant_metrics.csv": run_dir / "variant_metrics.csv",
        "data_manifest.json": run_dir / "data_manifest.json",
        "meta.json": run_dir / "meta.json",
        "results.jsonl": run_dir / "results.jsonl",
    }
    _write_json(paths["summary.json"], summary.as_json())
    paths["summary.md"].write_text(summary_markdown(summary), encoding="utf-8")
    paths["variant_metrics.csv"].write_text(variant_csv(summary), encoding="utf-8")
    _write_json(paths["data_manifest.json"], manifest)
    _write_json(paths["meta.json"], meta)
    paths["results.jsonl"].touch()
    return paths


def missing_reason(count: int) -> str:
    return f"{count} selected case(s) never reported"


def carried_reasons(summary: dict[str, Any]) -> list[str]:
    """A summary's incomplete reasons other than its lost cases, which a rescored run counts anew."""
    reasons = summary.get("completeness", {}).get("reasons", [])
    lost = summary.get("coverage", {}).get("missing", {}).get("count", 0)
    return [r for r in reasons if not (lost and r == missing_reason(lost))]


def assemble_summary(
    metrics: dict[str, Any],
    gate: GateResult,
    *,
    run: dict[str, Any],
    stack: dict[str, Any],
    selection: dict[str, Any],
    thresholds: dict[str, Any],
    incomplete_reasons: Sequence[str] = (),
) -> dict[str, Any]:
    """The summary.json document. `completeness` says whether every selected case was measured, so
    no reader takes an interrupted run, a run with lost cases or a merge short of shards for a whole one."""
    reasons = list(incomplete_reasons)
    missing = metrics["coverage"]["missing"]["count"]
    if missing:
        reasons.append(missing_reason(missing))
    return {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "completeness": {"complete": not reasons, "reasons": reasons},
        "run": run,
        "stack": stack,
        "selection": selection,
        "thresholds": thresholds,
        **metrics,
        "gate": {
            "passed": gate.passed,
            "verdict": gate.verdict,
            "checks": [{**c.model_dump(), "passed": c.passed} for c in gate.checks],
        },
    }


def terminal_lines(summary: RunSummary) -> list[str]:
    """The compact scorecard table printed at the end of the pytest output."""
    width = max([26, *(len(v) + 11 for v in summary.per_variant)])
    header = f"{'scope':<{width}}{'n':>6}{'TP':>5}{'FP':>5}{'TN':>5}{'FN':>5}{'recall':>8}{'FPR':>7}{'BER':>7}{'F1':>7}"
    lines = [f"scoring policy: {summary.policy}", header]

    def row(name: str, card: dict[str, Any]) -> str:
        return (
            f"{name:<{width}}{card['n']:>6}{card['tp']:>5}{card['fp']:>5}{card['tn']:>5}{card['fn']:>5}"
            f"{fmt_rate(card['recall']):>8}{fmt_rate(card['false_positive_rate']):>7}{fmt_rate(card['balanced_error_rate']):>7}{fmt_rate(card['f1']):>7}"
        )

    for scope, card in summary.scorecards.items():
        lines.append(row(scope, card))
    for variant, cards in summary.per_variant.items():
        lines.append(row(f"  variant {variant}", cards["system"]))
    cov = summary.coverage
    lines.append(
        f"coverage: {cov['scored']['count']}/{cov['expected']} scored, {cov['unlabelled']['count']} unlabelled, "
        f"{cov['errored']['count']} errored, {cov['malformed_judge']['count']} judge-malformed, {cov['missing']['count']} missing"
    )
    lines.extend(f"warning: {w}" for w in summary.warnings)
    for role, calls in sorted((summary.run.get("execution") or {}).get("api_calls", {}).items()):
        if isinstance(calls, dict) and calls.get("circuit_breaker"):
            breaker = calls["circuit_breaker"]
            lines.append(f"{role}: {breaker['reason']} ({breaker['calls_not_sent']} calls not sent)")
    lines.extend(resume_lines(summary))
    lines.extend(incomplete_lines(summary, "INCOMPLETE RUN: "))
    return lines


def resume_lines(summary: RunSummary) -> list[str]:
    """A resumed run says so: how many cases it took from the stopped run and how many it re-ran
    because their text or label changed."""
    info = (summary.run.get("execution") or {}).get("resume")
    if not info:
        return []
    changed = info.get("changed_cases", 0)
    return [f"resumed {info['run_dir']}: {info['finished_before']} finished cases reused"
            + (f", {changed} re-run because their prompt or label changed" if changed else "")]  # fmt: skip


def incomplete_lines(summary: RunSummary, prefix: str) -> list[str]:
    """One line saying why the run is not a whole measurement, or nothing."""
    if summary.completeness.complete:
        return []
    return [prefix + "; ".join(summary.completeness.reasons)]


def utc_now() -> datetime:
    return datetime.now(UTC)
