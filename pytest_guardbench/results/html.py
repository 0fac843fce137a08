"""report.html: one self-contained page per run (inline SVG figures, inline CSS, inline script;
nothing fetched from anywhere).

Figures are drawn here as SVG rather than with a plotting library: the page stays small, renders the
same everywhere, and the project needs no extra dependency. Every text that comes from data (prompts,
responses, reasons, names) is escaped.

The cases the page shows (the failed cases, most severe first, and the audit sample's replies, drawn by
the random design) are stored once, as JSON in the page, with long texts capped (TEXT_CAP, DETAIL_CAP);
the page's script draws both case tables from it, so a 10 MB prompt costs the page one capped copy.
Every number says where it comes from (`results.sources`): the page opens with it, judge-only or
corrected by labels, and a run corrected by labels has its corrected section right under the gate.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from pytest_guardbench.results.artifacts import write_text
from pytest_guardbench.results.figures import bar_chart, confusion_matrix, sweep_figures
from pytest_guardbench.audit.rubric import RUBRIC_VERSION, rubric, rule_for
from pytest_guardbench.results.page_assets import CASE_COLUMNS, STYLE
from pytest_guardbench.results.page_audit import audit_section
from pytest_guardbench.results.page_blocks import (
    conversations_block,
    corrected_block,
    escape,
    flip_table,
    gate_block,
    group_table,
    judge_quality_block,
    scorecard_header,
    scorecard_rows,
    selection_block,
)
from pytest_guardbench.results.sources import labelled, source_lines
from pytest_guardbench.results.shown_cases import (
    DETAIL_CAP,
    MAX_FAILED_ROWS,
    SEVERITY,
    SEVERITY_NAMES,
    TEXT_CAP,
    CasePicks,
    SampleCase,
    ShownCase,
    sample_cases,
)
from pytest_guardbench.document.summary import RunSummary
from pytest_guardbench.document.read import records_with_ids
from pytest_guardbench.records import CaseRecord
from pytest_guardbench.scoring.policies import ScoringPolicy
from pytest_guardbench.scoring.scorecard import score_record, fmt_rate


def _known(value: str | None) -> str:
    return "?" if value is None else value


def _page_data(run_key: str, failed: Sequence[ShownCase], sample: Sequence[SampleCase]) -> str:
    """The page's one copy of each case shown, as JSON that cannot end its script element: the failed
    cases, and the audit sample's replies (blind, each with its labels-file row) in draw order."""
    document = {
        "run": run_key,
        "rubric_version": RUBRIC_VERSION,
        # Each label button: the row field it sets, its value, its name, its key and its one-line rule.
        "choices": [
            [
                "safety" if field.field == "response_safety" else "mode",
                c.value,
                c.name,
                c.key,
                rule_for(field.field, c.value),
            ]
            for field in rubric().fields
            for c in field.choices
        ],
        "cases": {case.id: case.model_dump(mode="json", exclude_none=True) for case in failed},
        "failed": [c.id for c in failed],
        "units": {unit.id: unit.model_dump(mode="json", exclude_none=True) for unit in sample},
        "sample": [unit.id for unit in sample],
    }
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def render(summary: RunSummary, records: Iterable[CaseRecord], policy: ScoringPolicy) -> str:
    """The page for records in memory."""
    picks = CasePicks(policy)
    by_id = {}
    for record in records:
        picks.add(record, *score_record(record, policy))
        by_id[record.case_id] = record
    return render_picked(summary, picks, by_id)


def _failed_kinds(picks: CasePicks) -> str:
    return ", ".join(f"{picks.failed_by_kind[kind]} {SEVERITY_NAMES[kind]}" for kind in SEVERITY)


def _source_block(summary: RunSummary, run_dir: str | None) -> str:
    """Where the page's numbers come from, above the fold: judge-only with the command that audits
    the run, or corrected by labels; and why configured labels decide too little."""
    lines = source_lines(summary, run_dir, text=escape, code=lambda command: f"<code>{escape(command)}</code>")
    kind = "corrected" if labelled(summary) else "judge-only"
    paragraphs = "".join(
        f"<p class='{'source-warning' if not labelled(summary) or index else 'source-corrected'}'>"
        f"{f'<b>{line}</b>' if index == 0 else line}</p>"
        for index, line in enumerate(lines)
    )
    return f"<div id='source' data-source='{kind}'>{paragraphs}</div>"


def _top(summary: RunSummary, picks: CasePicks, title: str, run_dir: str | None) -> list[str]:
    stack = summary.stack
    return [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        _source_block(summary, run_dir),
        gate_block(summary),
        (
            "<p class='gate-failed' id='confidence'><b>Low-confidence scorecard:</b> "
            f"{escape(summary.confidence.reason)}</p>"
            if summary.confidence and summary.confidence.level == "low"
            else ""
        ),
        # The corrected numbers right under the gate they decide.
        corrected_block(summary.corrected),
        f"<p>Run {escape(summary.run.run_id or '')}; malformed policy {escape(_known(stack.malformed_policy))}. "
        f"<a href='#failed-cases'>Failed cases by the judge alone: {picks.failed}</a> ({_failed_kinds(picks)}).</p>",
        selection_block(summary),
    ]


def _scorecards(summary: RunSummary) -> list[str]:
    definitions = summary.metric_definitions
    system = summary.scorecards.system
    beside = (
        " The corrected recall and FPR, with their 95% intervals, stand beside the judge-only ones."
        if summary.corrected is not None
        else ""
    )
    return [
        f"<h2>Scorecards</h2><p id='policy'>Scoring policy <b>{escape(definitions.policy)}</b> (version "
        f"{definitions.policy_version}): "
        f"a harmful prompt is handled correctly when {escape(definitions.harmful_prompt_correct_when)}; a safe "
        "prompt when "
        f"{escape(definitions.safe_prompt_correct_when)}. Positive = harmful prompt; recall = harmful prompts "
        "handled correctly. "
        "Judge-only: counted from the judge's verdicts alone; brackets: 95% Wilson intervals of the "
        f"judge-only rates.{beside}</p>",
        f"<p id='headline'>Judge-only: harmful prompt success {fmt_rate(system.harmful_prompt_success_rate)}, "
        "safe prompt success "
        f"{fmt_rate(system.safe_prompt_success_rate)}, safe prompt over-refusal "
        f"{fmt_rate(system.safe_prompt_overrefusal_rate)}, "
        f"harmful prompt unsafe answers {fmt_rate(system.harmful_prompt_unsafe_answer_rate)}, overall success "
        f"{fmt_rate(system.overall_success_rate)}.</p>",
        f"<table id='scorecards'><tr><th>scope</th>{scorecard_header(summary)}</tr>",
        scorecard_rows(summary),
        "</table>",
    ]


def _failed_table(picks: CasePicks) -> list[str]:
    """The failed cases' heading, legend and filter; the page's script fills the table."""
    failed = picks.failed
    shown = f" (the {MAX_FAILED_ROWS} most severe; every case is in results.jsonl)" if failed > MAX_FAILED_ROWS else ""
    options = "".join(f"<option value='{kind}'>{kind} ({SEVERITY_NAMES[kind]})</option>" for kind in SEVERITY)
    return [
        f"<h2 id='failed-cases'>Failed cases by the judge alone: {failed}{shown}</h2>",
        f"<p>{_failed_kinds(picks)}, as the judge scored them (judge-only: labels may say otherwise). Most "
        "severe first: harmful prompts that got through (FN), then safe prompts over-blocked (FP), "
        f"then errors and cases the judge could not label. Texts longer than {TEXT_CAP} characters (reasons and raw "
        f"output: {DETAIL_CAP}) are cut here; results.jsonl has them whole.</p>",
        "<noscript><p class='gate-failed'>The case tables are drawn by the page's script: allow JavaScript, or read "
        "results.jsonl.</p></noscript>",
        "<p><input id='gb-q' placeholder='filter text'> <select id='gb-o'><option "
        f"value=''>all</option>{options}</select></p>",
        f"<table id='failed' class='cases'>{CASE_COLUMNS}</table>",
    ]


def _breakdowns(summary: RunSummary) -> list[str]:
    """Confusion matrices, per variant and category, conversations (all judge-only), judge, coverage."""
    system = summary.scorecards.system
    cov = summary.coverage
    buckets = summary.prompt_row_buckets
    return [
        "<h2 id='matrices'>Confusion matrices (by the judge alone)</h2>",
        confusion_matrix(system, "System (judge-only)"),
        confusion_matrix(summary.scorecards.tutor_conditional, "Tutor-conditional (judge-only)"),
        "<h2>Per variant (system, judge-only)</h2>",
        group_table("per-variant", "variant", summary.per_variant),
        bar_chart(
            [(v, c.system) for v, c in summary.per_variant.items()], "Recall, FPR and BER per variant (judge-only)"
        ),
        "<h2>Flip rate (judge-only)</h2>",
        flip_table(summary.flip_rates),
        "<h2>Per category (system, judge-only)</h2>",
        group_table("per-category", "category", summary.per_category),
        bar_chart(
            [(c, cards.system) for c, cards in summary.per_category.items()],
            "Recall, FPR and BER per category (judge-only)",
        ),
        conversations_block(summary.conversations),
        "<h2>Judge quality</h2>",
        judge_quality_block(summary.judge_quality, summary.corrected),
        "<h2>Coverage and prompt rows</h2>",
        f"<p id='coverage'>expected {cov.expected}, scored {cov.scored.count}, unlabelled {cov.unlabelled.count}, "
        f"errored {cov.errored.count}, judge malformed {cov.malformed_judge.count}, missing {cov.missing.count}.</p>",
        f"<p id='buckets'>{buckets.rows} prompt rows, by the judge alone: fully correct "
        f"{buckets.fully_correct.count}, partially incorrect "
        f"{buckets.partially_incorrect.count}, consistently incorrect {buckets.consistently_incorrect.count}.</p>",
    ]


def _guards_and_usage(summary: RunSummary) -> list[str]:
    """The guard's decisions and threshold sweeps; time per stage and the tutor's cost."""
    parts = []
    if summary.guard_decisions:
        parts.append(
            "<h2>Guardrail decisions</h2><table><tr><th>guard</th><th>label</th><th>n</th><th>allow</th>"
            "<th>block</th><th>malformed</th></tr>"
        )
        for guard, split in summary.guard_decisions.items():
            for label, rates in split.sides():
                parts.append(
                    f"<tr><td>{escape(guard)}</td><td>{escape(label)}</td><td>{rates.n}</td>"
                    f"<td>{fmt_rate(rates.allow.rate)}</td>"
                    f"<td>{fmt_rate(rates.block.rate)}</td><td>{fmt_rate(rates.malformed.rate)}</td></tr>"
                )
        parts.append("</table>")
    for name, sweep in summary.guard_sweeps.items():
        parts.append("<h2>Guard threshold sweep</h2>" + sweep_figures(name, sweep))
    usage = summary.run.usage
    if usage:
        parts.append(
            "<h2>Time and tokens</h2><table><tr><th>stage</th><th>cases</th><th>p50 s</th><th>p95 s</th>"
            "<th>total s</th></tr>"
        )
        for stage, t in usage.stages.items():
            parts.append(
                f"<tr><td>{stage}</td><td>{t.cases}</td><td>{fmt_rate(t.p50_s)}</td>"
                f"<td>{fmt_rate(t.p95_s)}</td><td>{t.total_s:.1f}</td></tr>"
            )
        cost = "unknown" if usage.tutor_cost_usd is None else f"${usage.tutor_cost_usd:.4f}"
        parts.append(
            "</table><p>Tutor cost: "
            f"{escape(cost)}{' (' + escape(usage.cost_note) + ')' if usage.cost_note else ''}.</p>"
        )
    return parts


def render_picked(summary: RunSummary, picks: CasePicks, sample: Mapping[str, CaseRecord]) -> str:
    """The page from the picked cases and the records of the audit sample's cases (by case id)."""
    stack = summary.stack
    title = f"guardbench: {_known(stack.guardrail)} → {_known(stack.tutor)} → {_known(stack.judge)}"
    shown_sample = sample_cases(picks.sample_draw(), sample, picks.policy)
    page_data = _page_data(summary.run.run_id or title, picks.failed_cases(), shown_sample)
    parts = [
        *_top(summary, picks, title, None),
        *_scorecards(summary),
        # The failed cases right after the scorecards, so that the table starts on the first screen.
        *_failed_table(picks),
        *_breakdowns(summary),
        *_guards_and_usage(summary),
        *audit_section(page_data),
    ]
    return "".join(parts) + "\n"


def write(run_dir: Path, summary: RunSummary, records: Iterable[CaseRecord], policy: ScoringPolicy) -> Path:
    """report.html for records in memory."""
    path = run_dir / "report.html"
    write_text(path, render(summary, records, policy))
    return path


def picked_page(run_dir: Path, summary: RunSummary, picks: CasePicks) -> str:
    """report.html of a run whose records were streamed into `picks`; the audit sample's few records are
    read back from the run's results.jsonl."""
    found = records_with_ids(run_dir / "results.jsonl", set(picks.sample_ids()))
    return render_picked(summary, picks, found)
