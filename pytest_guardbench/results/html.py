"""report.html: one self-contained page per run (inline SVG figures, inline CSS, inline script;
nothing fetched from anywhere).

Figures are drawn here as SVG rather than with a plotting library: the page stays small, renders the
same everywhere, and the project needs no extra dependency. Every text that comes from data (prompts,
responses, reasons, names) is escaped.

The cases the page shows (the failed cases, most severe first, and the audit sample) are stored once,
as JSON in the page, with long texts capped (TEXT_CAP, DETAIL_CAP); the page's script draws both case
tables from it. So a case in both tables, or a 10 MB prompt, costs the page one capped copy.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_guardbench.results.artifacts import write_text
from pytest_guardbench.results.figures import bar_chart, confusion_matrix, depth_chart, sweep_figures
from pytest_guardbench.results.page_assets import CASE_COLUMNS, SCRIPT, STYLE
from pytest_guardbench.results.shown_cases import (
    AUDIT_SAMPLE,
    AUDIT_SEED,
    DETAIL_CAP,
    MAX_FAILED_ROWS,
    SEVERITY,
    SEVERITY_NAMES,
    TEXT_CAP,
    CasePicks,
    ShownCase,
)
from pytest_guardbench.results.summary import RunSummary, records_with_ids
from pytest_guardbench.records import CaseRecord
from pytest_guardbench.scoring.blocks import ConversationMetrics, DepthRate, FlipRate, ScopeCards
from pytest_guardbench.scoring.policies import ScoringPolicy
from pytest_guardbench.results.corrected import judge_lines
from pytest_guardbench.scoring.blocks import Correction, JudgeQuality
from pytest_guardbench.scoring.scorecard import Scorecard, score_record, fmt_rate


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _interval(bounds: Sequence[float] | None) -> str:
    return "" if not bounds else f" [{bounds[0]:.3f}, {bounds[1]:.3f}]"


def _rate_cell(value: float | None, bounds: Sequence[float] | None = None, metric: str = "") -> str:
    data = f" class='metric' data-metric='{_e(metric)}'" if metric else ""
    return (
        f"<td{data}>{fmt_rate(value)}<small>{_interval(bounds)}</small></td>"
        if bounds
        else f"<td{data}>{fmt_rate(value)}</td>"
    )


def _card_cells(card: Scorecard, scope: str = "") -> str:
    recall = _rate_cell(card.recall, card.recall_interval_95, f"{scope}.recall" if scope else "")
    fpr = _rate_cell(card.false_positive_rate, card.false_positive_rate_interval_95, f"{scope}.fpr" if scope else "")
    return (
        f"<td>{card.n}</td><td>{card.tp}</td><td>{card.fp}</td><td>{card.tn}</td><td>{card.fn}</td>{recall}{fpr}"
        f"<td>{fmt_rate(card.balanced_error_rate)}</td><td>{fmt_rate(card.f1)}</td><td>{fmt_rate(card.precision)}</td>"
    )


CARD_HEADER = "<th>n</th><th>TP</th><th>FP</th><th>TN</th><th>FN</th><th>recall</th><th>FPR</th><th>BER</th><th>F1</th><th>precision</th>"


def _scorecard_rows(summary: RunSummary) -> str:
    return "".join(
        f"<tr><th>{_e(scope)}</th>{_card_cells(card, scope)}</tr>" for scope, card in summary.scorecards.scopes()
    )


def _group_table(table_id: str, name: str, groups: Mapping[str, ScopeCards]) -> str:
    """The system scorecard of each variant or category, as a table."""
    rows = "".join(f"<tr><th>{_e(group)}</th>{_card_cells(cards.system)}</tr>" for group, cards in groups.items())
    return f"<table id='{table_id}'><tr><th>{_e(name)}</th>{CARD_HEADER}</tr>{rows}</table>"


def _flip_table(flip_rates: Mapping[str, FlipRate]) -> str:
    if not flip_rates:
        return "<p>No flip rate: the run has no variant paired with <code>original</code>.</p>"
    rows = "".join(
        f"<tr><th>{_e(variant)}</th><td>{fmt_rate(f.guard_flip_rate)}</td><td>{f.guard_flips} of {f.guard_pairs}</td>"
        f"<td>{fmt_rate(f.outcome_flip_rate)}</td><td>{f.became_mishandled}</td><td>{f.became_handled}</td><td>{f.outcome_pairs}</td></tr>"
        for variant, f in flip_rates.items()
    )
    return (
        "<p>How often a variant is handled differently from the <code>original</code> prompt it was made from "
        "(pairs of the same base prompt and sample).</p><table id='flip-rates'><tr><th>variant</th><th>guard flip rate</th>"
        "<th>guard flips</th><th>outcome flip rate</th><th>became mishandled</th><th>became handled</th><th>pairs</th></tr>"
        f"{rows}</table>"
    )


def _depth_cell(row: DepthRate | None) -> str:
    if row is None:
        return "<td></td>"
    return f"<td data-count='{row.count}'>{fmt_rate(row.rate)}<small>{_interval(row.interval)} {row.count} of {row.n}</small></td>"


def _conversations(talks: ConversationMetrics | None) -> str:
    """The Conversations section: the conversation scorecard, how deep the system stops a harmful
    conversation and over-blocks a safe one, and where the first unsafe replies came; empty without
    conversations."""
    if talks is None:
        return ""
    cards = "".join(f"<tr><th>{_e(scope)}</th>{_card_cells(card)}</tr>" for scope, card in talks.scorecards.scopes())
    depths = "".join(
        f"<tr><th>{d}</th>{_depth_cell(talks.at('recall_by_turn', d))}{_depth_cell(talks.at('over_blocking_by_turn', d))}"
        f"<td>{talks.first_unsafe_turn.get(d, 0)}</td></tr>"
        for d in range(1, talks.max_depth + 1)
    )
    figure = depth_chart(
        [
            ("caught (harmful)", "#2b7bb9", talks.recall_by_turn),
            ("over-blocked (safe)", "#d95f02", talks.over_blocking_by_turn),
        ],
        "Stopped by depth",
    )
    return (
        "<section id='conversations'><h2>Conversations</h2>"
        f"<p>{talks.conversations} conversations ({talks.harmful} harmful, {talks.safe} safe scored), up to "
        f"{talks.max_depth} user turns answered. A conversation is unsafe if any reply in it was judged unsafe.</p>"
        f"<table id='conversation-scorecards'><tr><th>scope</th>{CARD_HEADER}</tr>{cards}</table>"
        f"{confusion_matrix(talks.scorecards.system, 'Conversations (system)')}"
        "<p>Depth counts the user turns the system answered. <b>Caught by depth d</b>: the share of harmful "
        "conversations stopped (the guard blocked or the tutor refused, with no unsafe reply before) at depth d or "
        "earlier; <b>over-blocked by depth d</b>: the same for safe conversations. A harmful conversation whose "
        "replies were all safe without a refusal is handled but never caught. <b>First unsafe reply</b>: harmful "
        "conversations whose first unsafe reply came at that depth. Brackets: 95% Wilson intervals.</p>"
        "<table id='conversation-depths'><tr><th>depth</th><th>caught by depth</th><th>over-blocked by depth</th>"
        f"<th>first unsafe reply</th></tr>{depths}</table>{figure}</section>"
    )


def _corrected(correction: Correction | None) -> str:
    """Judge-only and audit-corrected recall and FPR side by side, with the labels used."""
    if correction is None:
        return ""
    rows = "".join(
        f"<tr><th>{_e(scope)} {_e(name)}</th><td>{fmt_rate(m.judge_only)}</td><td>{fmt_rate(m.labels_only)}</td>"
        f"<td>{fmt_rate(m.estimate) if m.estimate is not None else _e(m.note or 'n/a')}<small>{_interval(_pair(m.ci_low, m.ci_high))}</small></td>"
        f"<td>{m.n_labelled}/{m.n_total}</td></tr>"
        for scope, pair in (
            ("system", correction.scorecards.system),
            ("tutor_conditional", correction.scorecards.tutor_conditional),
        )
        for name, m in (("recall", pair.recall), ("FPR", pair.false_positive_rate))
    )
    use = correction.labels
    notes = "".join(f"<li>{_e(line)}</li>" for line in judge_lines(correction))
    return (
        f"<h2>Audit-corrected scorecards</h2><p id='corrected-labels'>Corrected by {use.used} labels of this run's own "
        f"replies (<code>{_e(use.labels_file)}</code>, {_e(use.design)} design); the gate decides recall and FPR on the "
        "corrected 95% intervals.</p><table id='corrected'><tr><th>metric</th><th>judge-only</th><th>labels-only</th>"
        f"<th>corrected</th><th>labelled</th></tr>{rows}</table><ul>{notes}</ul>"
    )


def _gate(summary: RunSummary) -> str:
    """The verdict, then each check in its own colour: a passed check is green even when the gate failed."""
    gate, marks = summary.gate, {"pass": "✓ passed", "fail": "✗ failed", "inconclusive": "? inconclusive"}
    counted = f"{len(gate.failures)} of {len(gate.checks)} checks failed" if gate.checks else "no checks"
    checks = "".join(
        f"<li class='check-{_e(c.status)}' data-check='{_e(c.name)}' data-status='{_e(c.status)}'>"
        f"<b>{marks.get(c.status, _e(c.status))}</b> {_e(c.message)}</li>"
        for c in gate.checks
    )
    return (
        f"<div id='gate'><p class='gate-{_e(gate.verdict)}'><b>Gate {_e(gate.verdict)}</b>: {counted}.</p>"
        f"<ul class='gate-checks'>{checks}</ul></div>"
    )


def _pair(low: float | None, high: float | None) -> tuple[float, float] | None:
    return None if low is None or high is None else (low, high)


def _judge_quality(quality: JudgeQuality | None) -> str:
    if quality is None:
        return (
            "<p id='judge-quality'>This run did not check its judge against human labels: run with "
            "<code>--guardbench-judge-check=FILE</code>, or label a sample with <code>guardbench audit</code> "
            "(or below) and score a judge with <code>guardbench judge-quality</code>.</p>"
        )
    if quality.error is not None:
        return f"<p id='judge-quality' class='gate-failed'>The judge check failed: {_e(quality.error)}</p>"

    def rate(key: str) -> str:
        return f"{fmt_rate(getattr(quality, key))}<small>{_interval(getattr(quality, key + '_interval_95'))}</small>"

    rows = [
        (
            "safety agreement",
            f"{fmt_rate(quality.agreement)}<small>{_interval(quality.safety_agreement_interval_95)}</small>",
        ),
        ("Cohen's kappa (safety)", f"{fmt_rate(quality.cohen_kappa)}<small>bar {fmt_rate(quality.min_kappa)}</small>"),
        ("over-block rate (safe answers called unsafe)", rate("over_block_rate")),
        ("miss rate (unsafe answers called safe)", rate("miss_rate")),
        ("answer mode agreement", rate("answer_mode_agreement")),
        ("policy label agreement", rate("policy_label_agreement")),
        ("malformed rate", fmt_rate(quality.malformed_rate)),
    ]
    table = "".join(f"<tr><th>{_e(name)}</th><td>{value}</td></tr>" for name, value in rows)
    per_bucket = quality.per_bucket or {}
    buckets = "".join(
        f"<tr><th>{_e(bucket)}</th><td>{_e(q.rows if q.rows is not None else '')}</td><td>{fmt_rate(q.agreement)}</td>"
        f"<td>{fmt_rate(q.over_block_rate)}</td><td>{fmt_rate(q.miss_rate)}</td><td>{fmt_rate(q.malformed_rate)}</td></tr>"
        for bucket, q in per_bucket.items()
    )
    disagreements = len(quality.disagreements or [])
    return (
        f"<p id='judge-quality'>Judge <b>{_e(quality.judge or '?')}</b> against {_e(quality.rows if quality.rows is not None else '?')} human labels "
        f"in <code>{_e(quality.labels_file or '?')}</code>; {disagreements} disagreements (listed in summary.json).</p>"
        f"<table id='judge-quality-table'>{table}</table>"
        + (
            "<table id='judge-quality-buckets'><tr><th>bucket</th><th>rows</th><th>agreement</th><th>over-block</th>"
            f"<th>miss</th><th>malformed</th></tr>{buckets}</table>"
            if buckets
            else ""
        )
    )


def _selection(summary: RunSummary) -> str:
    selection, stack = summary.selection, summary.stack
    parts = [
        f"<b>-k</b> {_e(selection.keyword) if selection.keyword else '(none)'}",
        f"<b>-m</b> {_e(selection.markexpr) if selection.markexpr else '(none)'}",
        f"<b>variants</b> {_e(', '.join(stack.variants)) if stack.variants else '?'}",
        f"<b>samples per prompt</b> {_e(stack.samples if stack.samples is not None else '?')}",
        f"<b>shard</b> {_e(selection.shard or '(whole run)')}",
    ]
    if selection.merged_shards:
        parts.append(f"<b>merged shards</b> {_e(', '.join(selection.merged_shards))}")
    if selection.absent_shards:
        parts.append(f"<b class='gate-failed'>absent shards</b> {_e(', '.join(selection.absent_shards))}")
    if selection.selected_cases is not None:
        of = f" of {selection.total_cases}" if selection.total_cases is not None else ""
        partial = " (a partial run: not every case of the suite)" if selection.partial else ""
        parts.append(f"<b>cases</b> {selection.selected_cases}{of} selected{partial}")
    return "<p id='selection'>" + "; ".join(parts) + ".</p>"


def _known(value: str | None) -> str:
    return "?" if value is None else value


def _page_data(run_key: str, failed: Sequence[ShownCase], sample: Sequence[ShownCase]) -> str:
    """The page's one copy of each case shown, as JSON that cannot end its script element."""
    cases = {case.id: case.model_dump(mode="json", exclude_none=True) for case in (*failed, *sample)}
    document = {"run": run_key, "cases": cases, "failed": [c.id for c in failed], "sample": [c.id for c in sample]}
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def render(summary: RunSummary, records: Iterable[CaseRecord], policy: ScoringPolicy) -> str:
    """The page for records in memory."""
    picks = CasePicks(policy)
    by_id = {}
    for record in records:
        picks.add(record, *score_record(record, policy))
        by_id[record.case_id] = record
    return render_picked(summary, picks, [by_id[case_id] for case_id in picks.sample_ids()])


def render_picked(summary: RunSummary, picks: CasePicks, sample: Sequence[CaseRecord]) -> str:
    """The page from the picked cases and the audit sample's records (in sample order)."""
    policy = picks.policy
    stack = summary.stack
    title = f"guardbench: {_known(stack.guardrail)} → {_known(stack.tutor)} → {_known(stack.judge)}"
    cov = summary.coverage
    buckets = summary.prompt_row_buckets
    failed_cases = picks.failed_cases()
    shown_sample = [ShownCase.of(record, *score_record(record, policy)) for record in sample]
    failed, by_kind = picks.failed, picks.failed_by_kind
    definitions = summary.metric_definitions
    system = summary.scorecards.system
    kinds = ", ".join(f"{by_kind[kind]} {SEVERITY_NAMES[kind]}" for kind in SEVERITY)
    shown = f" (the {MAX_FAILED_ROWS} most severe; every case is in results.jsonl)" if failed > MAX_FAILED_ROWS else ""
    options = "".join(f"<option value='{kind}'>{kind} ({SEVERITY_NAMES[kind]})</option>" for kind in SEVERITY)
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        _gate(summary),
        (
            f"<p class='gate-failed' id='confidence'><b>Low-confidence scorecard:</b> {_e(summary.confidence.reason)}</p>"
            if summary.confidence and summary.confidence.level == "low"
            else ""
        ),
        f"<p>Run {_e(summary.run.run_id or '')}; malformed policy {_e(_known(stack.malformed_policy))}. "
        f"<a href='#failed-cases'>Failed cases: {failed}</a> ({kinds}).</p>",
        _selection(summary),
        f"<h2>Scorecards</h2><p id='policy'>Scoring policy <b>{_e(definitions.policy)}</b> (version {definitions.policy_version}): "
        f"a harmful prompt is handled correctly when {_e(definitions.harmful_prompt_correct_when)}; a safe prompt when "
        f"{_e(definitions.safe_prompt_correct_when)}. Positive = harmful prompt; recall = harmful prompts handled correctly. "
        "Brackets: 95% Wilson intervals.</p>",
        f"<p id='headline'>Harmful prompt success {fmt_rate(system.harmful_prompt_success_rate)}, safe prompt success "
        f"{fmt_rate(system.safe_prompt_success_rate)}, safe prompt over-refusal {fmt_rate(system.safe_prompt_overrefusal_rate)}, "
        f"harmful prompt unsafe answers {fmt_rate(system.harmful_prompt_unsafe_answer_rate)}, overall success "
        f"{fmt_rate(system.overall_success_rate)}.</p>",
        f"<table id='scorecards'><tr><th>scope</th>{CARD_HEADER}</tr>",
        _scorecard_rows(summary),
        "</table>",
        # The failed cases right after the scorecards, so that the table starts on the first screen.
        f"<h2 id='failed-cases'>Failed cases: {failed}{shown}</h2>",
        f"<p>{kinds}. Most severe first: harmful prompts that got through (FN), then safe prompts over-blocked (FP), "
        f"then errors and cases the judge could not label. Texts longer than {TEXT_CAP} characters (reasons and raw "
        f"output: {DETAIL_CAP}) are cut here; results.jsonl has them whole.</p>",
        "<noscript><p class='gate-failed'>The case tables are drawn by the page's script: allow JavaScript, or read "
        "results.jsonl.</p></noscript>",
        f"<p><input id='gb-q' placeholder='filter text'> <select id='gb-o'><option value=''>all</option>{options}</select></p>",
        f"<table id='failed' class='cases'>{CASE_COLUMNS}</table>",
        _corrected(summary.corrected),
        "<h2>Confusion matrices</h2>",
        confusion_matrix(system, "System"),
        confusion_matrix(summary.scorecards.tutor_conditional, "Tutor-conditional"),
        "<h2>Per variant (system)</h2>",
        _group_table("per-variant", "variant", summary.per_variant),
        bar_chart([(v, c.system) for v, c in summary.per_variant.items()], "Recall, FPR and BER per variant"),
        "<h2>Flip rate</h2>",
        _flip_table(summary.flip_rates),
        "<h2>Per category (system)</h2>",
        _group_table("per-category", "category", summary.per_category),
        bar_chart([(c, cards.system) for c, cards in summary.per_category.items()], "Recall, FPR and BER per category"),
        _conversations(summary.conversations),
        "<h2>Judge quality</h2>",
        _judge_quality(summary.judge_quality),
        "<h2>Coverage and prompt rows</h2>",
        f"<p id='coverage'>expected {cov.expected}, scored {cov.scored.count}, unlabelled {cov.unlabelled.count}, "
        f"errored {cov.errored.count}, judge malformed {cov.malformed_judge.count}, missing {cov.missing.count}.</p>",
        f"<p id='buckets'>{buckets.rows} prompt rows: fully correct {buckets.fully_correct.count}, partially incorrect "
        f"{buckets.partially_incorrect.count}, consistently incorrect {buckets.consistently_incorrect.count}.</p>",
    ]
    if summary.guard_decisions:
        parts.append(
            "<h2>Guardrail decisions</h2><table><tr><th>guard</th><th>label</th><th>n</th><th>allow</th><th>block</th><th>malformed</th></tr>"
        )
        for guard, split in summary.guard_decisions.items():
            for label, rates in split.sides():
                parts.append(
                    f"<tr><td>{_e(guard)}</td><td>{_e(label)}</td><td>{rates.n}</td><td>{fmt_rate(rates.allow.rate)}</td>"
                    f"<td>{fmt_rate(rates.block.rate)}</td><td>{fmt_rate(rates.malformed.rate)}</td></tr>"
                )
        parts.append("</table>")
    for name, sweep in summary.guard_sweeps.items():
        parts.append("<h2>Guard threshold sweep</h2>" + sweep_figures(name, sweep))
    usage = summary.run.usage
    if usage:
        parts.append(
            "<h2>Time and tokens</h2><table><tr><th>stage</th><th>cases</th><th>p50 s</th><th>p95 s</th><th>total s</th></tr>"
        )
        for stage, t in usage.stages.items():
            parts.append(
                f"<tr><td>{stage}</td><td>{t.cases}</td><td>{fmt_rate(t.p50_s)}</td><td>{fmt_rate(t.p95_s)}</td><td>{t.total_s:.1f}</td></tr>"
            )
        cost = "unknown" if usage.tutor_cost_usd is None else f"${usage.tutor_cost_usd:.4f}"
        parts.append(
            f"</table><p>Tutor cost: {_e(cost)}{' (' + _e(usage.cost_note) + ')' if usage.cost_note else ''}.</p>"
        )
    parts += [
        f"<h2>Audit sample</h2><p>{AUDIT_SAMPLE} cases drawn in turn from each outcome (TP, FP, TN, FN), and within it from each "
        f"answer mode and variant (the same cases <code>guardbench audit RUN_DIR --sample {AUDIT_SAMPLE} --seed {AUDIT_SEED}</code> "
        "starts with). Label a case (safety, then answer mode): its outcome and the judge's labels are shown once you have, "
        "so they cannot sway you. Labels stay in this browser (local storage) across reloads; export them as "
        "judge-labels JSONL for <code>guardbench judge-quality</code>. The failed cases above can be labelled too (not blind).</p>",
        "<p><label><input type='checkbox' id='gb-show-judge'> show the judge's labels before I answer</label></p>",
        f"<table id='sample' class='cases'>{CASE_COLUMNS}</table>",
        "<p><button type='button' id='gb-export-button'>Export labels (JSONL)</button> "
        "<span id='gb-count'>0</span> labelled cases <button type='button' id='gb-clear-button'>Forget labels</button></p>"
        "<textarea id='gb-export' rows='6' cols='100' readonly></textarea>",
        f"<script type='application/json' id='gb-cases'>{_page_data(summary.run.run_id or title, failed_cases, shown_sample)}</script>",
        f"<script>{SCRIPT}</script></body></html>",
    ]
    return "".join(parts) + "\n"


def write(run_dir: Path, summary: RunSummary, records: Iterable[CaseRecord], policy: ScoringPolicy) -> Path:
    """report.html for records in memory."""
    path = run_dir / "report.html"
    write_text(path, render(summary, records, policy))
    return path


def write_picked(run_dir: Path, summary: RunSummary, picks: CasePicks) -> Path:
    """report.html of a run whose records were streamed into `picks`; the audit sample's few records are
    read back from the run's results.jsonl."""
    path = run_dir / "report.html"
    wanted = picks.sample_ids()
    found = records_with_ids(run_dir / "results.jsonl", set(wanted))
    write_text(path, render_picked(summary, picks, [found[case_id] for case_id in wanted]))
    return path
