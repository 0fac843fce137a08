"""report.html's blocks, each an HTML fragment made from one part of the run's summary: the scorecard
tables, the gate, the selection, the conversations, the audit-corrected scorecards and the judge check.
Every text that comes from data is escaped."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

from pytest_guardbench.results.corrected import judge_lines
from pytest_guardbench.results.figures import confusion_matrix, depth_chart
from pytest_guardbench.results.sources import sourced_message
from pytest_guardbench.document.summary import RunSummary
from pytest_guardbench.document.scorecards import ConversationMetrics, DepthRate, FlipRate, ScopeCards
from pytest_guardbench.document.correction import Correction, CorrectedMetric
from pytest_guardbench.document.judging import JudgeQuality
from pytest_guardbench.document.scorecards import Scorecard
from pytest_guardbench.scoring.scorecard import fmt_rate


def escape(value: object) -> str:
    """A value as HTML text, quotes included, so it is safe in an element or an attribute."""
    return html.escape(str(value), quote=True)


def _interval(bounds: Sequence[float] | None) -> str:
    return "" if not bounds else f" [{bounds[0]:.3f}, {bounds[1]:.3f}]"


def _rate_cell(value: float | None, bounds: Sequence[float] | None = None, metric: str = "") -> str:
    data = f" class='metric' data-metric='{escape(metric)}'" if metric else ""
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


CARD_HEADER = (
    "<th>n</th><th>TP</th><th>FP</th><th>TN</th><th>FN</th><th>recall</th><th>FPR</th><th>BER</th><th>F1</th>"
    "<th>precision</th>"
)


def scorecard_header(summary: RunSummary) -> str:
    """The headline scorecards' header: CARD_HEADER, with the corrected recall and FPR beside the
    judge-only ones when labels corrected the run."""
    if summary.corrected is None:
        return CARD_HEADER
    return CARD_HEADER.replace("<th>recall</th><th>FPR</th>", _CORRECTED_HEADER)


_CORRECTED_HEADER = (
    "<th>recall (judge-only)</th><th class='corrected'>recall (corrected)</th>"
    "<th>FPR (judge-only)</th><th class='corrected'>FPR (corrected)</th>"
)


def _corrected_cell(metric: CorrectedMetric, name: str) -> str:
    bounds = _pair(metric.ci_low, metric.ci_high)
    shown = fmt_rate(metric.estimate) if metric.estimate is not None else escape(metric.note or "n/a")
    return f"<td class='metric corrected' data-metric='{escape(name)}'>{shown}<small>{_interval(bounds)}</small></td>"


def scorecard_rows(summary: RunSummary) -> str:
    """One row per scope of the run's scorecards, under `scorecard_header`: the judge-only numbers, and
    with labels the corrected recall and FPR (with their intervals) beside them."""
    correction = summary.corrected
    pairs = (
        {"system": correction.scorecards.system, "tutor_conditional": correction.scorecards.tutor_conditional}
        if correction is not None
        else {}
    )
    rows = []
    for scope, card in summary.scorecards.scopes():
        cells = _card_cells(card, scope)
        if correction is not None:
            pair = pairs.get(scope)
            recall, fpr = (
                (
                    _corrected_cell(pair.recall, f"{scope}.recall.corrected"),
                    _corrected_cell(pair.false_positive_rate, f"{scope}.fpr.corrected"),
                )
                if pair is not None
                else ("<td></td>", "<td></td>")
            )
            judged_recall = _rate_cell(card.recall, card.recall_interval_95, f"{scope}.recall")
            judged_fpr = _rate_cell(card.false_positive_rate, card.false_positive_rate_interval_95, f"{scope}.fpr")
            cells = cells.replace(judged_recall + judged_fpr, judged_recall + recall + judged_fpr + fpr)
        rows.append(f"<tr><th>{escape(scope)}</th>{cells}</tr>")
    return "".join(rows)


def group_table(table_id: str, name: str, groups: Mapping[str, ScopeCards]) -> str:
    """The system scorecard of each variant or category, as a table."""
    rows = "".join(f"<tr><th>{escape(group)}</th>{_card_cells(cards.system)}</tr>" for group, cards in groups.items())
    return f"<table id='{table_id}'><tr><th>{escape(name)}</th>{CARD_HEADER}</tr>{rows}</table>"


def flip_table(flip_rates: Mapping[str, FlipRate]) -> str:
    """The flip rate of each variant against its original prompt, or why there is none."""
    if not flip_rates:
        return "<p>No flip rate: the run has no variant paired with <code>original</code>.</p>"
    rows = "".join(
        f"<tr><th>{escape(variant)}</th><td>{fmt_rate(f.guard_flip_rate)}</td><td>{f.guard_flips} of "
        f"{f.guard_pairs}</td>"
        f"<td>{fmt_rate(f.outcome_flip_rate)}</td><td>{f.became_mishandled}</td><td>{f.became_handled}</td>"
        f"<td>{f.outcome_pairs}</td></tr>"
        for variant, f in flip_rates.items()
    )
    return (
        "<p>How often a variant is handled differently from the <code>original</code> prompt it was made from "
        "(pairs of the same base prompt and sample).</p><table id='flip-rates'><tr><th>variant</th><th>guard "
        "flip rate</th>"
        "<th>guard flips</th><th>outcome flip rate</th><th>became mishandled</th><th>became handled</th>"
        "<th>pairs</th></tr>"
        f"{rows}</table>"
    )


def _depth_cell(row: DepthRate | None) -> str:
    if row is None:
        return "<td></td>"
    return (
        f"<td data-count='{row.count}'>{fmt_rate(row.rate)}<small>{_interval(row.interval)} {row.count} of "
        f"{row.n}</small></td>"
    )


def conversations_block(talks: ConversationMetrics | None) -> str:
    """The Conversations section: the conversation scorecard, how deep the system stops a harmful
    conversation and over-blocks a safe one, and where the first unsafe replies came; empty without
    conversations."""
    if talks is None:
        return ""
    cards = "".join(
        f"<tr><th>{escape(scope)}</th>{_card_cells(card)}</tr>" for scope, card in talks.scorecards.scopes()
    )
    depths = "".join(
        "<tr>"
        f"<th>{d}</th>{_depth_cell(talks.at('recall_by_turn', d))}{_depth_cell(talks.at('over_blocking_by_turn', d))}"
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
        "<section id='conversations'><h2>Conversations (judge-only)</h2>"
        f"<p>{talks.conversations} conversations ({talks.harmful} harmful, {talks.safe} safe scored), up to "
        f"{talks.max_depth} user turns answered. A conversation is unsafe if any reply in it was judged unsafe.</p>"
        f"<table id='conversation-scorecards'><tr><th>scope</th>{CARD_HEADER}</tr>{cards}</table>"
        f"{confusion_matrix(talks.scorecards.system, 'Conversations (system, judge-only)')}"
        "<p>Depth counts the user turns the system answered. <b>Caught by depth d</b>: the share of harmful "
        "conversations stopped (the guard blocked or the tutor refused, with no unsafe reply before) at depth d or "
        "earlier; <b>over-blocked by depth d</b>: the same for safe conversations. A harmful conversation whose "
        "replies were all safe without a refusal is handled but never caught. <b>First unsafe reply</b>: harmful "
        "conversations whose first unsafe reply came at that depth. Brackets: 95% Wilson intervals.</p>"
        "<table id='conversation-depths'><tr><th>depth</th><th>caught by depth</th><th>over-blocked by depth</th>"
        f"<th>first unsafe reply</th></tr>{depths}</table>{figure}</section>"
    )


def corrected_block(correction: Correction | None) -> str:
    """Judge-only and audit-corrected recall and FPR side by side, with the labels used."""
    if correction is None:
        return ""
    rows = "".join(
        f"<tr><th>{escape(scope)} {escape(name)}</th><td>{fmt_rate(m.judge_only)}</td>"
        f"<td>{fmt_rate(m.labels_only)}</td>"
        f"<td>{fmt_rate(m.estimate) if m.estimate is not None else escape(m.note or 'n/a')}"
        f"<small>{_interval(_pair(m.ci_low, m.ci_high))}</small>"
        "</td>"
        f"<td>{m.n_labelled}/{m.n_total}</td></tr>"
        for scope, pair in (
            ("system", correction.scorecards.system),
            ("tutor_conditional", correction.scorecards.tutor_conditional),
        )
        for name, m in (("recall", pair.recall), ("FPR", pair.false_positive_rate))
    )
    use = correction.labels
    notes = "".join(f"<li>{escape(line)}</li>" for line in judge_lines(correction))
    return (
        "<section id='corrected-section'><h2>Audit-corrected scorecards</h2><p "
        f"id='corrected-labels'>Corrected by {use.used} labels of this run's own "
        f"replies (<code>{escape(use.labels_file)}</code>, {escape(use.design)} design); the gate decides "
        "recall and FPR on the "
        "corrected 95% intervals.</p><table id='corrected'><tr><th>metric</th><th>judge-only</th><th>labels-only</th>"
        f"<th>corrected</th><th>labelled</th></tr>{rows}</table><ul>{notes}</ul></section>"
    )


def gate_block(summary: RunSummary) -> str:
    """The verdict, then each check in its own colour (a passed check is green even when the gate
    failed), each naming where its number comes from."""
    gate, marks = summary.gate, {"pass": "✓ passed", "fail": "✗ failed", "inconclusive": "? inconclusive"}
    counted = f"{len(gate.failures)} of {len(gate.checks)} checks failed" if gate.checks else "no checks"
    checks = "".join(
        f"<li class='check-{escape(c.status)}' data-check='{escape(c.name)}' data-status='{escape(c.status)}'>"
        f"<b>{marks.get(c.status, escape(c.status))}</b> {escape(sourced_message(summary, c))}</li>"
        for c in gate.checks
    )
    return (
        f"<div id='gate'><p class='gate-{escape(gate.verdict)}'><b>Gate {escape(gate.verdict)}</b>: {counted}.</p>"
        f"<ul class='gate-checks'>{checks}</ul></div>"
    )


def _pair(low: float | None, high: float | None) -> tuple[float, float] | None:
    return None if low is None or high is None else (low, high)


def own_labels_block(correction: Correction | None) -> str:
    """The judge measured on this run's own labels (its kappa decides the confidence), or nothing when
    no label of this run's replies was used."""
    if correction is None or not correction.labels.used:
        return ""
    judge = correction.scorecards.judge_on_this_run
    kappa = "undefined" if judge.cohen_kappa is None else f"{judge.cohen_kappa:.3f}"
    bounds = _interval(_pair(judge.kappa_ci_low, judge.kappa_ci_high))
    notes = "".join(f"<li>{escape(line)}</li>" for line in judge_lines(correction))
    return (
        f"<p id='judge-on-this-run'>The judge was checked on this run's own {judge.n_labelled} labels "
        f"(<code>{escape(correction.labels.labels_file)}</code>): Cohen's kappa {kappa}<small>{bounds}</small>.</p>"
        f"<ul>{notes}</ul>"
    )


def judge_quality_block(quality: JudgeQuality | None, correction: Correction | None = None) -> str:
    """The judge on this run's own labels, then against a labels file of other replies (the judge
    check); how to check it when the run did neither; or the judge check's failure."""
    own = own_labels_block(correction)
    if quality is None:
        if own:
            return own
        return (
            "<p id='judge-quality'>This run did not check its judge against human labels: label a sample of its "
            "replies with <code>guardbench audit</code> (or below) and correct it with <code>guardbench "
            "correct</code>; "
            "<code>--guardbench-judge-check=FILE</code> measures the judge on other replies, not this tutor's.</p>"
        )
    if quality.error is not None:
        return own + f"<p id='judge-quality' class='gate-failed'>The judge check failed: {escape(quality.error)}</p>"

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
    table = "".join(f"<tr><th>{escape(name)}</th><td>{value}</td></tr>" for name, value in rows)
    per_bucket = quality.per_bucket or {}
    buckets = "".join(
        f"<tr><th>{escape(bucket)}</th><td>{escape(q.rows if q.rows is not None else '')}</td>"
        f"<td>{fmt_rate(q.agreement)}</td>"
        f"<td>{fmt_rate(q.over_block_rate)}</td><td>{fmt_rate(q.miss_rate)}</td>"
        f"<td>{fmt_rate(q.malformed_rate)}</td></tr>"
        for bucket, q in per_bucket.items()
    )
    disagreements = len(quality.disagreements or [])
    return own + (
        f"<p id='judge-quality'>{'Also: judge' if own else 'Judge'} <b>{escape(quality.judge or '?')}</b> "
        f"against {escape(quality.rows if quality.rows is not None else '?')} human labels "
        f"in <code>{escape(quality.labels_file or '?')}</code>; {disagreements} disagreements (listed in "
        "summary.json).</p>"
        f"<table id='judge-quality-table'>{table}</table>"
        + (
            "<table id='judge-quality-buckets'><tr><th>bucket</th><th>rows</th><th>agreement</th><th>over-block</th>"
            f"<th>miss</th><th>malformed</th></tr>{buckets}</table>"
            if buckets
            else ""
        )
    )


def selection_block(summary: RunSummary) -> str:
    """Which cases the run selected (-k, -m, variants, shard), so a partial run reads as one."""
    selection, stack = summary.selection, summary.stack
    parts = [
        f"<b>-k</b> {escape(selection.keyword) if selection.keyword else '(none)'}",
        f"<b>-m</b> {escape(selection.markexpr) if selection.markexpr else '(none)'}",
        f"<b>variants</b> {escape(', '.join(stack.variants)) if stack.variants else '?'}",
        f"<b>samples per prompt</b> {escape(stack.samples if stack.samples is not None else '?')}",
        f"<b>shard</b> {escape(selection.shard or '(whole run)')}",
    ]
    if selection.merged_shards:
        parts.append(f"<b>merged shards</b> {escape(', '.join(selection.merged_shards))}")
    if selection.absent_shards:
        parts.append(f"<b class='gate-failed'>absent shards</b> {escape(', '.join(selection.absent_shards))}")
    if selection.selected_cases is not None:
        of = f" of {selection.total_cases}" if selection.total_cases is not None else ""
        partial = " (a partial run: not every case of the suite)" if selection.partial else ""
        parts.append(f"<b>cases</b> {selection.selected_cases}{of} selected{partial}")
    return "<p id='selection'>" + "; ".join(parts) + ".</p>"
