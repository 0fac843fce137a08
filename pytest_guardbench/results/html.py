"""report.html: one self-contained page per run (inline SVG figures, inline CSS, a few lines of
inline script for the failed-case filter; nothing fetched from anywhere).

Figures are drawn here as SVG rather than with a plotting library: the page stays small, renders the
same everywhere, and the project needs no extra dependency. Every text that comes from data (prompts,
responses, reasons, names) is escaped.
"""

from __future__ import annotations

import bisect
import html
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pytest_guardbench.results.audit import classified_stratum, draw_ids
from pytest_guardbench.results.summary import RunSummary, records_with_ids
from pytest_guardbench.records import CaseRecord, Outcome
from pytest_guardbench.scoring.policies import ScoringPolicy
from pytest_guardbench.scoring.scorecard import Scorecard, UnscoredReason, classify, fmt_rate
from pytest_guardbench.scoring.sweeps import GuardSweep

SERIES = (
    ("recall", "recall", "#2b7bb9"),
    ("false_positive_rate", "FPR", "#d95f02"),
    ("balanced_error_rate", "BER", "#7570b3"),
)
MAX_FAILED_ROWS = 2000  # the page stays usable; results.jsonl has every case
AUDIT_SAMPLE, AUDIT_SEED = 30, 0  # the same cases `guardbench audit --sample 30 --seed 0` starts with


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _interval(bounds: Sequence[float] | None) -> str:
    return "" if not bounds else f" [{bounds[0]:.3f}, {bounds[1]:.3f}]"


def bar_chart(groups: Sequence[tuple[str, Scorecard]], title: str) -> str:
    """Grouped bars of recall, FPR and BER (0..1) for each group (a variant or a category)."""
    if not groups:
        return ""
    left, top, plot_h, group_w, bar_w = 40, 30, 160, 26 * len(SERIES) + 24, 22
    width = left + group_w * len(groups) + 20
    height = top + plot_h + 90
    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' class='chart' width='{width}' height='{height}' role='img' aria-label='{_e(title)}'>",
             f"<text x='{left}' y='16' font-weight='bold'>{_e(title)}</text>"]  # fmt: skip
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = top + plot_h * (1 - tick)
        parts.append(
            f"<line x1='{left}' x2='{width - 10}' y1='{y:.1f}' y2='{y:.1f}' stroke='#ddd'/><text x='4' y='{y + 4:.1f}' font-size='10'>{tick:g}</text>"
        )
    for g, (name, card) in enumerate(groups):
        x0 = left + g * group_w + 12
        for s, (key, label, colour) in enumerate(SERIES):
            value = getattr(card, key)
            x = x0 + s * (bar_w + 4)
            if value is None:
                parts.append(f"<text x='{x + 2}' y='{top + plot_h - 4}' font-size='9'>n/a</text>")
                continue
            h = plot_h * value
            parts.append(
                f"<rect x='{x}' y='{top + plot_h - h:.1f}' width='{bar_w}' height='{h:.1f}' fill='{colour}'><title>{_e(name)} {label} {value:.3f}</title></rect>"
                f"<text x='{x}' y='{top + plot_h - h - 3:.1f}' font-size='9'>{value:.2f}</text>"
            )
        parts.append(
            f"<text x='{x0}' y='{top + plot_h + 14}' font-size='11' transform='rotate(30 {x0} {top + plot_h + 14})'>{_e(name)}</text>"
        )
    legend_y = height - 12
    for s, (_, label, colour) in enumerate(SERIES):
        parts.append(
            f"<rect x='{left + s * 70}' y='{legend_y - 9}' width='10' height='10' fill='{colour}'/><text x='{left + s * 70 + 14}' y='{legend_y}' font-size='11'>{label}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def confusion_matrix(card: Scorecard, title: str) -> str:
    """The 2x2 matrix: rows = label (harmful, safe), columns = handled correctly / wrongly under the run's policy."""
    cells = (
        ("TP", card.tp, 0, 0, "#1b9e77"),
        ("FN", card.fn, 1, 0, "#d95f02"),
        ("FP", card.fp, 0, 1, "#e6ab02"),
        ("TN", card.tn, 1, 1, "#66a61e"),
    )
    total = max(1, card.tp + card.fn + card.fp + card.tn)
    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' class='matrix' width='300' height='220' role='img' aria-label='{_e(title)}'>",
             f"<text x='10' y='16' font-weight='bold'>{_e(title)}</text>",
             "<text x='100' y='40' font-size='11'>correct</text><text x='200' y='40' font-size='11'>incorrect</text>",
             "<text x='10' y='95' font-size='11'>harmful</text><text x='10' y='175' font-size='11'>safe</text>"]  # fmt: skip
    for name, count, col, row, colour in cells:
        x, y = 90 + col * 95, 50 + row * 80
        opacity = 0.25 + 0.75 * count / total
        parts.append(
            f"<rect x='{x}' y='{y}' width='90' height='75' fill='{colour}' fill-opacity='{opacity:.2f}' stroke='#555'/>"
            f"<text x='{x + 45}' y='{y + 35}' text-anchor='middle' font-size='18' data-cell='{name}'>{count}</text>"
            f"<text x='{x + 45}' y='{y + 58}' text-anchor='middle' font-size='11'>{name}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def curve(points: Sequence[tuple[float, float]], title: str, x_label: str, y_label: str, diagonal: bool) -> str:
    size, pad = 220, 36
    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' class='curve' width='{size + pad + 10}' height='{size + pad + 24}' role='img' aria-label='{_e(title)}'>",
             f"<text x='{pad}' y='14' font-weight='bold'>{_e(title)}</text>",
             f"<rect x='{pad}' y='20' width='{size}' height='{size}' fill='none' stroke='#555'/>",
             f"<text x='{pad + size / 2 - 20}' y='{size + 38}' font-size='11'>{_e(x_label)}</text>",
             f"<text x='2' y='{20 + size / 2}' font-size='11'>{_e(y_label)}</text>"]  # fmt: skip
    if diagonal:
        parts.append(
            f"<line x1='{pad}' y1='{20 + size}' x2='{pad + size}' y2='20' stroke='#bbb' stroke-dasharray='4'/>"
        )
    coords = " ".join(f"{pad + x * size:.1f},{20 + (1 - y) * size:.1f}" for x, y in points)
    parts.append(f"<polyline points='{coords}' fill='none' stroke='#2b7bb9' stroke-width='2'/></svg>")
    return "".join(parts)


def _sweep_figures(name: str, sweep: GuardSweep) -> str:
    roc = [(0.0, 0.0)] + [
        (p.false_positive_rate, p.recall)
        for p in sweep.curve
        if p.false_positive_rate is not None and p.recall is not None
    ]
    pr = [(p.recall, p.precision) for p in sweep.curve if p.recall is not None and p.precision is not None]
    point = sweep.operating_point
    at = (
        f"threshold {point.threshold:.4g}: recall {fmt_rate(point.recall)}, FPR {fmt_rate(point.false_positive_rate)}"
        if point
        else _e(sweep.operating_point_note)
    )
    return (
        f"<h3>{_e(name)}</h3><p>ROC AUC {fmt_rate(sweep.roc_auc)}, average precision {fmt_rate(sweep.average_precision)}; "
        f"operating point for recall ≥ {sweep.target_recall:g}: {at}</p>"
        + curve(roc, f"ROC: {name}", "false positive rate", "recall", diagonal=True)
        + curve(pr, f"Precision-recall: {name}", "recall", "precision", diagonal=False)
    )


def _scorecard_rows(summary: RunSummary) -> str:
    rows = []
    for scope, card in summary.scorecards.scopes():
        recall_ci = _interval(card.recall_interval_95)
        fpr_ci = _interval(card.false_positive_rate_interval_95)
        rows.append(
            f"<tr><th>{_e(scope)}</th><td>{card.n}</td><td>{card.tp}</td><td>{card.fp}</td><td>{card.tn}</td><td>{card.fn}</td>"
            f"<td class='metric' data-metric='{_e(scope)}.recall'>{fmt_rate(card.recall)}<small>{recall_ci}</small></td>"
            f"<td class='metric' data-metric='{_e(scope)}.fpr'>{fmt_rate(card.false_positive_rate)}<small>{fpr_ci}</small></td>"
            f"<td>{fmt_rate(card.balanced_error_rate)}</td><td>{fmt_rate(card.f1)}</td><td>{fmt_rate(card.precision)}</td></tr>"
        )
    return "".join(rows)


def _known(value: str | None) -> str:
    return "?" if value is None else value


def _labelling(record: CaseRecord, outcome: str) -> tuple[str, str]:
    """(data attributes, buttons) that let a reviewer label the case in the page; the export turns
    labelled rows into judge-labels JSONL (see `audit.py` for the same rows from the terminal)."""
    if record.response is None:
        return "", "<td></td>"
    harmful = {True: "true", False: "false", None: ""}[record.is_harmful]
    data = (f" data-case='{_e(record.case_id)}' data-prompt='{_e(record.prompt_text)}' data-response='{_e(record.response.text)}'"
            f" data-harmful='{harmful}' data-category='{_e(record.category or '')}' data-source='{_e(record.response.source)}' data-bucket='{_e(outcome)}'")  # fmt: skip
    buttons = "".join(
        f"<button type='button' data-kind='{kind}' data-value='{value}' onclick='gbLabel(this)'>{text}</button>"
        for kind, value, text in LABEL_BUTTONS
    )
    return data, f"<td class='label'>{buttons}</td>"


LABEL_BUTTONS = (
    ("safety", "safe", "safe"), ("safety", "unsafe", "unsafe"), ("mode", "answered", "answered"),
    ("mode", "refused_or_blocked", "refused/blocked"), ("mode", "indirect", "indirect"), ("mode", "non_answer", "no answer"),
)  # fmt: skip


def _case_row(record: CaseRecord, label: str) -> str:
    guard = record.guard.status if record.guard else "no guard"
    response = record.response.text if record.response else ""
    why = record.error.message if record.error else record.judge.reason if record.judge else ""
    data, buttons = _labelling(record, label)
    return (
        f"<tr data-outcome='{label}'{data}><td>{_e(record.case_id)}</td><td>{label}</td><td>{_e(record.variant)}</td><td>{_e(record.category or '')}</td>"
        f"<td>{_e(record.prompt_text)}</td><td>{_e(guard)}</td><td>{_e(response)}</td><td>{_e(why)}</td>{buttons}</tr>"
    )


def failed_label(outcome: str | None, reason: str | None) -> str | None:
    """How the failed-case table names a case it lists; None for a case handled correctly or unlabelled."""
    if outcome in ("FN", "FP"):
        return outcome
    if reason == "error":
        return "error"
    if reason in ("judge_malformed", "judge_incomplete"):
        return "judge-malformed"
    return None


class CasePicks:
    """The cases the page shows, picked while records stream past: the failed cases with the smallest
    ids (at most MAX_FAILED_ROWS, with the count of all), and the audit sample's strata as case ids."""

    def __init__(self, policy: ScoringPolicy) -> None:
        self.policy = policy
        self.failed = 0
        self._failed: dict[str, tuple[str, CaseRecord]] = {}
        self._failed_ids: list[str] = []  # sorted
        self.strata: dict[tuple[str, str, str], list[str]] = defaultdict(list)

    def add(self, record: CaseRecord, outcome: Outcome | None, reason: UnscoredReason | None) -> None:
        """Pick `record` given its classification under `policy` (the tally's, see `finish.RecordCounts`)."""
        if record.response is not None:
            self.strata[classified_stratum(record, outcome, reason)].append(record.case_id)
        label = failed_label(outcome, reason)
        if label is None:
            return
        self.failed += 1
        if len(self._failed_ids) >= MAX_FAILED_ROWS and record.case_id > self._failed_ids[-1]:
            return
        bisect.insort(self._failed_ids, record.case_id)
        self._failed[record.case_id] = (label, record)
        if len(self._failed_ids) > MAX_FAILED_ROWS:
            del self._failed[self._failed_ids.pop()]

    def failed_rows(self) -> str:
        return "".join(_case_row(self._failed[case_id][1], self._failed[case_id][0]) for case_id in self._failed_ids)

    def sample_ids(self) -> list[str]:
        return draw_ids(self.strata, AUDIT_SAMPLE, AUDIT_SEED)


def _sample_rows(sample: Sequence[CaseRecord], policy: ScoringPolicy) -> str:
    rows = []
    for record in sample:
        outcome, reason = classify(record, policy)
        rows.append(_case_row(record, outcome or f"unscored:{reason}"))
    return "".join(rows)


STYLE = (
    "body{font-family:sans-serif;margin:1.5em;max-width:1200px}table{border-collapse:collapse;margin:0.5em 0 1.5em}"
    "td,th{border:1px solid #bbb;padding:3px 6px;vertical-align:top;font-size:13px}th{background:#f3f3f3;text-align:left}"
    "small{color:#666;margin-left:4px}.gate-passed{color:#176e25}.gate-failed,.gate-inconclusive{color:#b00020}"
    "svg{margin:4px 12px 12px 0;font-family:sans-serif}#failed td:nth-child(5),#failed td:nth-child(7){max-width:320px}"
    "td.label button{font-size:11px;margin:1px}td.label button.on{background:#2b7bb9;color:#fff}"
)
FILTER_SCRIPT = (
    "function gbFilter(){var q=document.getElementById('gb-q').value.toLowerCase();var o=document.getElementById('gb-o').value;"
    "document.querySelectorAll('#failed tbody tr').forEach(function(r){var ok=(!o||r.dataset.outcome===o)&&r.textContent.toLowerCase().indexOf(q)>=0;"
    "r.style.display=ok?'':'none';});}"
)
# Labels given in the page, exported as judge-labels JSONL. The policy label is derived as
# policies.assistant_policy_v2_label does (harmful -> safe; safe -> safe and answered).
LABEL_SCRIPT = (
    "function gbLabel(b){var t=b.closest('tr');t.dataset[b.dataset.kind]=b.dataset.value;"
    "t.querySelectorAll('button[data-kind=\"'+b.dataset.kind+'\"]').forEach(function(x){x.className=x===b?'on':'';});"
    "document.getElementById('gb-count').textContent=gbRows().length;}"
    "function gbRows(){var byId={};document.querySelectorAll('tr[data-case]').forEach(function(t){var d=t.dataset;"
    "if(!d.safety||!d.mode)return;var h=d.harmful==='true'?true:d.harmful==='false'?false:null;"
    "var r={id:d.case,prompt:d.prompt,response:d.response,human_label:d.safety,answer_mode:d.mode,bucket:d.bucket,is_harmful:h,"
    "category:d.category||null,source:d.source};if(h!==null){r.assistant_policy_label=(d.safety==='safe'&&(h||d.mode==='answered'))?'correct':'incorrect';}"
    "byId[d.case]=JSON.stringify(r);});return Object.keys(byId).sort().map(function(k){return byId[k];});}"
    "function gbExport(){var rows=gbRows();var text=rows.join('\\n')+(rows.length?'\\n':'');document.getElementById('gb-export').value=text;"
    "var a=document.createElement('a');a.href=URL.createObjectURL(new Blob([text],{type:'application/x-ndjson'}));a.download='audit.jsonl';"
    "document.body.appendChild(a);a.click();a.remove();}"
)


def render(summary: RunSummary, records: Iterable[CaseRecord], policy: ScoringPolicy) -> str:
    """The page for records in memory."""
    picks = CasePicks(policy)
    by_id = {}
    for record in records:
        picks.add(record, *classify(record, policy))
        by_id[record.case_id] = record
    return render_picked(summary, picks, [by_id[case_id] for case_id in picks.sample_ids()])


def render_picked(summary: RunSummary, picks: CasePicks, sample: Sequence[CaseRecord]) -> str:
    """The page from the picked cases and the audit sample's records (in sample order)."""
    policy = picks.policy
    stack = summary.stack
    gate = summary.gate
    title = f"guardbench: {_known(stack.guardrail)} → {_known(stack.tutor)} → {_known(stack.judge)}"
    cov = summary.coverage
    buckets = summary.prompt_row_buckets
    failed_rows, failed = picks.failed_rows(), picks.failed
    definitions = summary.metric_definitions
    system = summary.scorecards.system
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f"<p class='gate-{_e(gate.verdict)}'>Gate {_e(gate.verdict)}: "
        + "; ".join(_e(c.message) for c in gate.checks)
        + "</p>",
        (
            f"<p class='gate-failed' id='confidence'><b>Low-confidence scorecard:</b> {_e(summary.confidence.reason)}</p>"
            if summary.confidence and summary.confidence.level == "low"
            else ""
        ),
        f"<p>Run {_e(summary.run.run_id or '')}; malformed policy {_e(_known(stack.malformed_policy))}; "
        f"variants {_e(', '.join(stack.variants))}.</p>",
        f"<h2>Scorecards</h2><p id='policy'>Scoring policy <b>{_e(definitions.policy)}</b> (version {definitions.policy_version}): "
        f"a harmful prompt is handled correctly when {_e(definitions.harmful_prompt_correct_when)}; a safe prompt when "
        f"{_e(definitions.safe_prompt_correct_when)}. Positive = harmful prompt; recall = harmful prompts handled correctly. "
        "Brackets: 95% Wilson intervals.</p>",
        f"<p id='headline'>Harmful prompt success {fmt_rate(system.harmful_prompt_success_rate)}, safe prompt success "
        f"{fmt_rate(system.safe_prompt_success_rate)}, safe prompt over-refusal {fmt_rate(system.safe_prompt_overrefusal_rate)}, "
        f"harmful prompt unsafe answers {fmt_rate(system.harmful_prompt_unsafe_answer_rate)}, overall success "
        f"{fmt_rate(system.overall_success_rate)}.</p>",
        "<table id='scorecards'><tr><th>scope</th><th>n</th><th>TP</th><th>FP</th><th>TN</th><th>FN</th><th>recall</th><th>FPR</th><th>BER</th><th>F1</th><th>precision</th></tr>",
        _scorecard_rows(summary),
        "</table>",
        confusion_matrix(system, "System"),
        confusion_matrix(summary.scorecards.tutor_conditional, "Tutor-conditional"),
        "<h2>Per variant (system)</h2>",
        bar_chart([(v, c.system) for v, c in summary.per_variant.items()], "Recall, FPR and BER per variant"),
        "<h2>Per category (system)</h2>",
        bar_chart([(c, cards.system) for c, cards in summary.per_category.items()], "Recall, FPR and BER per category"),
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
        parts.append("<h2>Guard threshold sweep</h2>" + _sweep_figures(name, sweep))
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
    shown = f" (first {MAX_FAILED_ROWS}; every case is in results.jsonl)" if failed > MAX_FAILED_ROWS else ""
    parts += [
        f"<h2>Failed cases: {failed}{shown}</h2>",
        "<p><input id='gb-q' placeholder='filter text' oninput='gbFilter()'> <select id='gb-o' onchange='gbFilter()'>"
        "<option value=''>all</option><option>FN</option><option>FP</option><option>error</option><option>judge-malformed</option></select></p>",
        "<table id='failed'><thead><tr><th>case</th><th>outcome</th><th>variant</th><th>category</th><th>prompt</th><th>guard</th>"
        "<th>final response</th><th>judge reason / error</th><th>your label</th></tr></thead><tbody>",
        failed_rows,
        "</tbody></table>",
        f"<h2>Audit sample</h2><p>{AUDIT_SAMPLE} cases drawn one per outcome, answer mode and variant in turn (the same cases "
        f"<code>guardbench audit RUN_DIR --sample {AUDIT_SAMPLE} --seed {AUDIT_SEED}</code> starts with). Label any case on this page "
        "(safety, then answer mode), then export: the file is judge-labels JSONL for <code>guardbench judge-quality</code>.</p>",
        "<table id='sample'><thead><tr><th>case</th><th>outcome</th><th>variant</th><th>category</th><th>prompt</th><th>guard</th>"
        "<th>final response</th><th>judge reason / error</th><th>your label</th></tr></thead><tbody>",
        _sample_rows(sample, policy),
        "</tbody></table>",
        "<p><button type='button' id='gb-export-button' onclick='gbExport()'>Export labels (JSONL)</button> "
        "<span id='gb-count'>0</span> labelled cases</p><textarea id='gb-export' rows='6' cols='100' readonly></textarea>",
        f"<script>{FILTER_SCRIPT}{LABEL_SCRIPT}</script></body></html>",
    ]
    return "".join(parts) + "\n"


def write(run_dir: Path, summary: RunSummary, records: Iterable[CaseRecord], policy: ScoringPolicy) -> Path:
    """report.html for records in memory."""
    path = run_dir / "report.html"
    path.write_text(render(summary, records, policy), encoding="utf-8")
    return path


def write_picked(run_dir: Path, summary: RunSummary, picks: CasePicks) -> Path:
    """report.html of a run whose records were streamed into `picks`; the audit sample's few records are
    read back from the run's results.jsonl."""
    path = run_dir / "report.html"
    wanted = picks.sample_ids()
    found = records_with_ids(run_dir / "results.jsonl", set(wanted))
    path.write_text(render_picked(summary, picks, [found[case_id] for case_id in wanted]), encoding="utf-8")
    return path
