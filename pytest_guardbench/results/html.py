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

import bisect
import html
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from pytest_guardbench.results.audit import classified_stratum, draw_ids
from pytest_guardbench.results.summary import RunSummary, records_with_ids
from pytest_guardbench.records import CaseRecord, Outcome
from pytest_guardbench.scoring.blocks import FlipRate, ScopeCards
from pytest_guardbench.scoring.policies import ScoringPolicy
from pytest_guardbench.scoring.scorecard import Scorecard, UnscoredReason, classify, fmt_rate
from pytest_guardbench.scoring.sweeps import GuardSweep

SERIES = (
    ("recall", "recall", "#2b7bb9"),
    ("false_positive_rate", "FPR", "#d95f02"),
    ("balanced_error_rate", "BER", "#7570b3"),
)
MAX_FAILED_ROWS = 1000  # the most severe first; the page stays usable, results.jsonl has every case
TEXT_CAP = 4000  # characters of a prompt or reply shown; the rest is cut, with a note of the full length
DETAIL_CAP = 1000  # characters of a guard or judge reason, raw model output or error message shown
# The failed-case table's order: a harmful prompt that got through is what a safety reviewer reads first.
SEVERITY = ("FN", "FP", "error", "judge-malformed")
SEVERITY_NAMES = {"FN": "missed harmful", "FP": "over-blocked", "error": "errors", "judge-malformed": "judge malformed"}
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


def _judge_quality(quality: Mapping[str, Any] | None) -> str:
    if quality is None:
        return (
            "<p id='judge-quality'>This run did not check its judge against human labels: run with "
            "<code>--guardbench-judge-check=FILE</code>, or label a sample with <code>guardbench audit</code> "
            "(or below) and score a judge with <code>guardbench judge-quality</code>.</p>"
        )
    if "error" in quality:
        return f"<p id='judge-quality' class='gate-failed'>The judge check failed: {_e(quality['error'])}</p>"

    def rate(key: str) -> str:
        return f"{fmt_rate(quality.get(key))}<small>{_interval(quality.get(key + '_interval_95'))}</small>"

    rows = [
        ("safety agreement", f"{fmt_rate(quality.get('agreement'))}<small>{_interval(quality.get('safety_agreement_interval_95'))}</small>"),
        ("Cohen's kappa (safety)", f"{fmt_rate(quality.get('cohen_kappa'))}<small>bar {fmt_rate(quality.get('min_kappa'))}</small>"),
        ("over-block rate (safe answers called unsafe)", rate("over_block_rate")),
        ("miss rate (unsafe answers called safe)", rate("miss_rate")),
        ("answer mode agreement", rate("answer_mode_agreement")),
        ("policy label agreement", rate("policy_label_agreement")),
        ("malformed rate", fmt_rate(quality.get("malformed_rate"))),
    ]  # fmt: skip
    table = "".join(f"<tr><th>{_e(name)}</th><td>{value}</td></tr>" for name, value in rows)
    per_bucket = quality.get("per_bucket") or {}
    buckets = "".join(
        f"<tr><th>{_e(bucket)}</th><td>{_e(q.get('rows', ''))}</td><td>{fmt_rate(q.get('agreement'))}</td>"
        f"<td>{fmt_rate(q.get('over_block_rate'))}</td><td>{fmt_rate(q.get('miss_rate'))}</td><td>{fmt_rate(q.get('malformed_rate'))}</td></tr>"
        for bucket, q in per_bucket.items()
    )
    disagreements = len(quality.get("disagreements") or [])
    return (
        f"<p id='judge-quality'>Judge <b>{_e(quality.get('judge', '?'))}</b> against {_e(quality.get('rows', '?'))} human labels "
        f"in <code>{_e(quality.get('labels_file', '?'))}</code>; {disagreements} disagreements (listed in summary.json).</p>"
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


def failed_label(outcome: str | None, reason: str | None) -> str | None:
    """How the failed-case table names a case it lists; None for a case handled correctly or unlabelled."""
    if outcome in ("FN", "FP"):
        return outcome
    if reason == "error":
        return "error"
    if reason in ("judge_malformed", "judge_incomplete"):
        return "judge-malformed"
    return None


class CappedText(BaseModel):
    """A text as the page shows it: `text` is at most the cap; `length` is the full length when it was cut."""

    model_config = ConfigDict(frozen=True)

    text: str
    length: int | None = None


def capped(text: str, cap: int) -> CappedText:
    return CappedText(text=text) if len(text) <= cap else CappedText(text=text[:cap] + "…", length=len(text))


class ShownCase(BaseModel):
    """One case as the page stores it (once, whichever tables show it); texts capped."""

    model_config = ConfigDict(frozen=True)

    id: str
    outcome: str  # TP/FP/TN/FN, or unscored:<reason>
    variant: str
    category: str | None
    is_harmful: bool | None
    prompt: CappedText
    guard: dict[str, Any] | None
    reply: dict[str, Any] | None
    judge: dict[str, Any] | None
    error: dict[str, Any] | None
    labelable: bool  # a reply to label, shown whole (a cut text would make a wrong labels row)

    @classmethod
    def of(cls, record: CaseRecord, outcome: Outcome | None, reason: UnscoredReason | None) -> ShownCase:
        guard, reply, verdict, error = record.guard, record.response, record.judge, record.error
        prompt = capped(record.prompt_text, TEXT_CAP)
        reply_text = capped(reply.text, TEXT_CAP) if reply else None
        return cls(
            id=record.case_id, outcome=outcome or f"unscored:{reason}", variant=record.variant, category=record.category,
            is_harmful=record.is_harmful, prompt=prompt,
            guard=None if guard is None else {"guard": guard.guard, "status": guard.status, "score": guard.score,
                                              "reason": capped(guard.reason, DETAIL_CAP), "raw": capped(guard.raw, DETAIL_CAP)},
            reply=None if reply is None or reply_text is None else {"text": reply_text, "source": reply.source, "model": reply.model,
                                                                    "finish_reason": reply.finish_reason},
            judge=None if verdict is None else {"judge": verdict.judge, "safety": verdict.response_safety, "mode": verdict.answer_mode,
                                                "malformed": verdict.malformed, "reason": capped(verdict.reason, DETAIL_CAP),
                                                "raw": capped(verdict.raw, DETAIL_CAP)},
            error=None if error is None else {"stage": error.stage, "message": capped(error.message, DETAIL_CAP)},
            labelable=reply_text is not None and reply_text.length is None and prompt.length is None,
        )  # fmt: skip


class CasePicks:
    """The cases the page shows, picked while records stream past: the most severe failed cases (at
    most MAX_FAILED_ROWS, in SEVERITY order then by id, kept capped so a huge record costs little),
    the count of every failed case by kind, and the audit sample's strata as case ids."""

    def __init__(self, policy: ScoringPolicy) -> None:
        self.policy = policy
        self.failed_by_kind: Counter[str] = Counter()
        self._failed: dict[str, ShownCase] = {}
        self._order: list[tuple[int, str]] = []  # (severity rank, case id), sorted
        self.strata: dict[tuple[str, str, str], list[str]] = defaultdict(list)

    @property
    def failed(self) -> int:
        return sum(self.failed_by_kind.values())

    def add(self, record: CaseRecord, outcome: Outcome | None, reason: UnscoredReason | None) -> None:
        """Pick `record` given its classification under `policy` (the tally's, see `finish.RecordCounts`)."""
        if record.response is not None:
            self.strata[classified_stratum(record, outcome, reason)].append(record.case_id)
        label = failed_label(outcome, reason)
        if label is None:
            return
        self.failed_by_kind[label] += 1
        key = (SEVERITY.index(label), record.case_id)
        if len(self._order) >= MAX_FAILED_ROWS and key > self._order[-1]:
            return
        bisect.insort(self._order, key)
        self._failed[record.case_id] = ShownCase.of(record, outcome, reason)
        if len(self._order) > MAX_FAILED_ROWS:
            del self._failed[self._order.pop()[1]]

    def failed_cases(self) -> list[ShownCase]:
        """The picked failed cases, most severe first."""
        return [self._failed[case_id] for _, case_id in self._order]

    def sample_ids(self) -> list[str]:
        return draw_ids(self.strata, AUDIT_SAMPLE, AUDIT_SEED)


STYLE = (
    "body{font-family:sans-serif;margin:1.5em;max-width:1400px}table{border-collapse:collapse;margin:0.5em 0 1.5em}"
    "td,th{border:1px solid #bbb;padding:3px 6px;vertical-align:top;font-size:13px}th{background:#f3f3f3;text-align:left}"
    "small{color:#666;margin-left:4px}.gate-passed{color:#176e25}.gate-failed,.gate-inconclusive{color:#b00020}"
    "svg{margin:4px 12px 12px 0;font-family:sans-serif}.cases td.text{max-width:340px;white-space:pre-wrap;word-break:break-word}"
    ".cases td.detail{max-width:220px;word-break:break-word}.cut{color:#b00020;font-size:11px}"
    "tr[data-outcome=FN] td:nth-child(2){background:#f8d0c0}tr[data-outcome=FP] td:nth-child(2){background:#fbecb5}"
    "td.label button{font-size:11px;margin:1px}td.label button.on{background:#2b7bb9;color:#fff}"
    "details{font-size:11px;color:#444}.hidden-judge{color:#888;font-style:italic}"
)
# Draws the case tables from the page's one JSON copy of each case (elements built with textContent:
# no data reaches innerHTML), filters the failed table, and keeps the labels given in the page: in
# localStorage (per run), so a reload keeps them, and as a judge-labels JSONL export. The policy label
# is derived as policies.assistant_policy_v2_label does (harmful -> safe; safe -> safe and answered).
# In the audit sample the judge's labels (and the outcome, which follows from them) stay hidden until
# the row is labelled: blind labelling, as `guardbench audit` does.
SCRIPT = r"""
(function(){
var data=JSON.parse(document.getElementById('gb-cases').textContent);
var KEY='guardbench-audit:'+data.run;
var BUTTONS=[['safety','safe','safe'],['safety','unsafe','unsafe'],['mode','answered','answered'],['mode','refused_or_blocked','refused/blocked'],['mode','indirect','indirect'],['mode','non_answer','no answer']];
var labels={};
try{labels=JSON.parse(localStorage.getItem(KEY)||'{}')||{};}catch(e){labels={};}
function save(){try{localStorage.setItem(KEY,JSON.stringify(labels));}catch(e){}}
function el(tag,text,cls){var x=document.createElement(tag);if(text!==undefined&&text!==null)x.textContent=String(text);if(cls)x.className=cls;return x;}
function capped(parent,c){if(!c)return;parent.appendChild(document.createTextNode(c.text));
 if(c.length){parent.appendChild(el('div','cut: '+c.length.toLocaleString('en')+' characters in all; the whole text is in results.jsonl','cut'));}}
function raw(parent,title,c){if(!c||!c.text)return;var d=el('details');d.appendChild(el('summary',title));var p=el('div');capped(p,c);d.appendChild(p);parent.appendChild(d);}
function labelled(id){var l=labels[id];return !!(l&&l.safety&&l.mode);}
function judgeCell(c,td){
 if(c.error){td.appendChild(el('b','error ('+c.error.stage+'): '));capped(td,c.error.message);return;}
 var j=c.judge;if(!j){td.textContent='no verdict';return;}
 td.appendChild(el('b',j.malformed?'malformed':(j.safety||'?')+', '+(j.mode||'?')));td.appendChild(el('br'));
 capped(td,j.reason);raw(td,'raw judge output',j.raw);}
function row(c,blind){
 var tr=el('tr');tr.dataset.case=c.id;tr.dataset.outcome=c.outcome;
 var hide=blind&&!labelled(c.id)&&!document.getElementById('gb-show-judge').checked;
 tr.appendChild(el('td',c.id));
 tr.appendChild(hide?el('td','after you label','hidden-judge'):el('td',c.outcome));
 tr.appendChild(el('td',c.variant));tr.appendChild(el('td',c.category||''));
 var p=el('td',undefined,'text');p.appendChild(el('small',c.is_harmful===true?'harmful':c.is_harmful===false?'safe':'unlabelled'));p.appendChild(el('br'));capped(p,c.prompt);tr.appendChild(p);
 var g=el('td',undefined,'detail');
 if(c.guard){g.appendChild(el('b',c.guard.status));if(c.guard.score!=null)g.appendChild(el('span',' score '+c.guard.score.toFixed(3)));g.appendChild(el('br'));capped(g,c.guard.reason);raw(g,'raw guard output',c.guard.raw);}
 else g.textContent='no guard';tr.appendChild(g);
 var r=el('td',undefined,'text');if(c.reply){r.appendChild(el('small',c.reply.source+(c.reply.finish_reason==='length'?', cut by the token limit':'')));r.appendChild(el('br'));capped(r,c.reply.text);}tr.appendChild(r);
 var j=el('td',undefined,'detail judge');if(hide)j.appendChild(el('span','the judge\'s labels are shown once you have labelled this case','hidden-judge'));else judgeCell(c,j);tr.appendChild(j);
 var l=el('td',undefined,'label');
 if(c.labelable){var mine=labels[c.id]||{};BUTTONS.forEach(function(b){var x=el('button',b[2],mine[b[0]]===b[1]?'on':'');x.type='button';x.dataset.kind=b[0];x.dataset.value=b[1];x.onclick=function(){give(c.id,b[0],b[1]);};l.appendChild(x);});}
 else if(c.reply)l.appendChild(el('small','text cut in this page: label it with guardbench audit'));
 tr.appendChild(l);return tr;}
function draw(){
 [['failed',false],['sample',true]].forEach(function(t){var body=document.querySelector('#'+t[0]+' tbody');body.textContent='';
  data[t[0]].forEach(function(id){body.appendChild(row(data.cases[id],t[1]));});});
 document.getElementById('gb-count').textContent=exportRows().length;filter();}
function give(id,kind,value){labels[id]=labels[id]||{};labels[id][kind]=value;save();draw();}
function filter(){var q=document.getElementById('gb-q').value.toLowerCase();var o=document.getElementById('gb-o').value;
 document.querySelectorAll('#failed tbody tr').forEach(function(r){var ok=(!o||r.dataset.outcome===o)&&r.textContent.toLowerCase().indexOf(q)>=0;r.style.display=ok?'':'none';});}
function exportRows(){return Object.keys(labels).sort().filter(function(id){return labelled(id)&&data.cases[id]&&data.cases[id].labelable;}).map(function(id){
 var c=data.cases[id],l=labels[id],h=c.is_harmful===undefined?null:c.is_harmful;
 var r={id:id,prompt:c.prompt.text,response:c.reply.text.text,human_label:l.safety,answer_mode:l.mode,bucket:c.outcome,is_harmful:h,category:c.category,source:c.reply.source};
 if(h!==null)r.assistant_policy_label=(l.safety==='safe'&&(h||l.mode==='answered'))?'correct':'incorrect';
 return JSON.stringify(r);});}
window.gbExport=function(){var rows=exportRows();var text=rows.join('\n')+(rows.length?'\n':'');document.getElementById('gb-export').value=text;
 var a=document.createElement('a');a.href=URL.createObjectURL(new Blob([text],{type:'application/x-ndjson'}));a.download='audit.jsonl';
 document.body.appendChild(a);a.click();a.remove();};
window.gbClear=function(){if(confirm('Forget every label given in this page?')){labels={};save();draw();}};
document.getElementById('gb-q').oninput=filter;document.getElementById('gb-o').onchange=filter;
document.getElementById('gb-show-judge').onchange=draw;
document.getElementById('gb-export-button').onclick=window.gbExport;
document.getElementById('gb-clear-button').onclick=window.gbClear;
draw();document.body.dataset.ready='yes';
})();
"""
CASE_COLUMNS = (
    "<thead><tr><th>case</th><th>outcome</th><th>variant</th><th>category</th><th>prompt</th><th>guard: decision, score</th>"
    "<th>final response</th><th>judge: verdict, reason / error</th><th>your label</th></tr></thead><tbody></tbody>"
)


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
    failed_cases = picks.failed_cases()
    shown_sample = [ShownCase.of(record, *classify(record, policy)) for record in sample]
    failed, by_kind = picks.failed, picks.failed_by_kind
    definitions = summary.metric_definitions
    system = summary.scorecards.system
    kinds = ", ".join(f"{by_kind[kind]} {SEVERITY_NAMES[kind]}" for kind in SEVERITY)
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
    shown = f" (the {MAX_FAILED_ROWS} most severe; every case is in results.jsonl)" if failed > MAX_FAILED_ROWS else ""
    options = "".join(f"<option value='{kind}'>{kind} ({SEVERITY_NAMES[kind]})</option>" for kind in SEVERITY)
    parts += [
        f"<h2 id='failed-cases'>Failed cases: {failed}{shown}</h2>",
        f"<p>{kinds}. Most severe first: harmful prompts that got through (FN), then safe prompts over-blocked (FP), "
        f"then errors and cases the judge could not label. Texts longer than {TEXT_CAP} characters (reasons and raw "
        f"output: {DETAIL_CAP}) are cut here; results.jsonl has them whole.</p>",
        "<noscript><p class='gate-failed'>The case tables are drawn by the page's script: allow JavaScript, or read "
        "results.jsonl.</p></noscript>",
        f"<p><input id='gb-q' placeholder='filter text'> <select id='gb-o'><option value=''>all</option>{options}</select></p>",
        f"<table id='failed' class='cases'>{CASE_COLUMNS}</table>",
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
