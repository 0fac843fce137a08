"""The SVG figures of report.html: bar charts per variant, confusion matrices, and a guard's ROC and
precision-recall curves. Inline SVG, no script, no external file."""

from __future__ import annotations

import html
from collections.abc import Sequence

from pytest_guardbench.document.scorecards import DepthRate
from pytest_guardbench.document.scorecards import Scorecard
from pytest_guardbench.scoring.scorecard import fmt_rate
from pytest_guardbench.document.scorecards import GuardSweep


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


SERIES = (
    ("recall", "recall", "#2b7bb9"),
    ("false_positive_rate", "FPR", "#d95f02"),
    ("balanced_error_rate", "BER", "#7570b3"),
)


def bar_chart(groups: Sequence[tuple[str, Scorecard]], title: str) -> str:
    """Grouped bars of recall, FPR and BER (0..1) for each group (a variant or a category)."""
    if not groups:
        return ""
    left, top, plot_h, group_w, bar_w = 40, 30, 160, 26 * len(SERIES) + 24, 22
    width = max(left + group_w * len(groups) + 20, left + 8 * len(title))  # a one-group chart keeps its whole title
    height = top + plot_h + 90
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' class='chart' width='{width}' height='{height}' role='img' "
        f"aria-label='{_e(title)}'>",
        f"<text x='{left}' y='16' font-weight='bold'>{_e(title)}</text>",
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = top + plot_h * (1 - tick)
        parts.append(
            f"<line x1='{left}' x2='{width - 10}' y1='{y:.1f}' y2='{y:.1f}' stroke='#ddd'/><text x='4' "
            f"y='{y + 4:.1f}' font-size='10'>{tick:g}</text>"
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
                f"<rect x='{x}' y='{top + plot_h - h:.1f}' width='{bar_w}' height='{h:.1f}' fill='{colour}'>"
                f"<title>{_e(name)} {label} {value:.3f}</title></rect>"
                f"<text x='{x}' y='{top + plot_h - h - 3:.1f}' font-size='9'>{value:.2f}</text>"
            )
        parts.append(
            f"<text x='{x0}' y='{top + plot_h + 14}' font-size='11' transform='rotate(30 {x0} "
            f"{top + plot_h + 14})'>{_e(name)}</text>"
        )
    legend_y = height - 12
    for s, (_, label, colour) in enumerate(SERIES):
        parts.append(
            f"<rect x='{left + s * 70}' y='{legend_y - 9}' width='10' height='10' fill='{colour}'/><text "
            f"x='{left + s * 70 + 14}' y='{legend_y}' font-size='11'>{label}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


# The matrix's rows are the prompt's label and its columns how the run handled it, so each row reads
# "of the harmful (safe) prompts, this many handled correctly, this many mishandled".
MATRIX_ROWS = ("harmful prompt", "safe prompt")
MATRIX_COLUMNS = ("handled correctly", "mishandled")


def confusion_matrix(card: Scorecard, title: str) -> str:
    """The 2x2 matrix: rows = the prompt's label (harmful, safe), columns = handled correctly /
    mishandled under the run's policy; TP and FN in the harmful row, TN and FP in the safe row."""
    cells = (  # name, count, column, row, colour
        ("TP", card.tp, 0, 0, "#1b9e77"),
        ("FN", card.fn, 1, 0, "#d95f02"),
        ("TN", card.tn, 0, 1, "#66a61e"),
        ("FP", card.fp, 1, 1, "#e6ab02"),
    )
    total = max(1, card.tp + card.fn + card.fp + card.tn)
    left, top, width, height = 110, 50, 110, 75
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' class='matrix' width='{left + 2 * (width + 5) + 5}' "
        f"height='{top + 2 * (height + 5) + 5}' role='img' aria-label='{_e(title)}: confusion matrix'>",
        f"<text x='10' y='16' font-weight='bold'>{_e(title)}</text>",
    ]
    for column, name in enumerate(MATRIX_COLUMNS):
        x = left + column * (width + 5) + width / 2
        parts.append(
            f"<text x='{x:g}' y='{top - 8}' text-anchor='middle' font-size='12' data-column='{column}'>{name}</text>"
        )
    for row, name in enumerate(MATRIX_ROWS):
        parts.append(
            f"<text x='10' y='{top + row * (height + 5) + height / 2 + 4:g}' font-size='12' "
            f"data-row='{row}'>{name}</text>"
        )
    for name, count, column, row, colour in cells:
        x, y = left + column * (width + 5), top + row * (height + 5)
        opacity = 0.25 + 0.75 * count / total
        parts.append(
            f"<g data-matrix-cell='{name}' data-row='{MATRIX_ROWS[row]}' data-column='{MATRIX_COLUMNS[column]}'>"
            f"<rect x='{x}' y='{y}' width='{width}' height='{height}' fill='{colour}' "
            f"fill-opacity='{opacity:.2f}' stroke='#555'/>"
            f"<text x='{x + width / 2:g}' y='{y + 35}' text-anchor='middle' font-size='18' "
            f"data-cell='{name}'>{count}</text>"
            f"<text x='{x + width / 2:g}' y='{y + 58}' text-anchor='middle' font-size='12'>{name}</text></g>"
        )
    parts.append("</svg>")
    return "".join(parts)


def curve(points: Sequence[tuple[float, float]], title: str, x_label: str, y_label: str, diagonal: bool) -> str:
    size, pad = 220, 36
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' class='curve' width='{size + pad + 10}' "
        f"height='{size + pad + 24}' role='img' aria-label='{_e(title)}'>",
        f"<text x='{pad}' y='14' font-weight='bold'>{_e(title)}</text>",
        f"<rect x='{pad}' y='20' width='{size}' height='{size}' fill='none' stroke='#555'/>",
        f"<text x='{pad + size / 2 - 20}' y='{size + 38}' font-size='11'>{_e(x_label)}</text>",
        f"<text x='2' y='{20 + size / 2}' font-size='11'>{_e(y_label)}</text>",
    ]
    if diagonal:
        parts.append(
            f"<line x1='{pad}' y1='{20 + size}' x2='{pad + size}' y2='20' stroke='#bbb' stroke-dasharray='4'/>"
        )
    coords = " ".join(f"{pad + x * size:.1f},{20 + (1 - y) * size:.1f}" for x, y in points)
    parts.append(f"<polyline points='{coords}' fill='none' stroke='#2b7bb9' stroke-width='2'/></svg>")
    return "".join(parts)


def sweep_figures(name: str, sweep: GuardSweep) -> str:
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
        f"<h3>{_e(name)}</h3><p>ROC AUC {fmt_rate(sweep.roc_auc)}, average precision "
        f"{fmt_rate(sweep.average_precision)}; "
        f"operating point for recall ≥ {sweep.target_recall:g}: {at}</p>"
        + curve(roc, f"ROC: {name}", "false positive rate", "recall", diagonal=True)
        + curve(pr, f"Precision-recall: {name}", "recall", "precision", diagonal=False)
    )


def depth_chart(series: Sequence[tuple[str, str, Sequence[DepthRate]]], title: str) -> str:
    """Lines of rates (0..1) by conversation depth, one per (name, colour, rows), each point with its
    95% interval as a vertical bar."""
    depth = max((row.depth for _, _, rows in series for row in rows), default=0)
    if not depth:
        return ""
    left, top, plot_h, step = 40, 30, 160, 60
    legend = left + step * depth + 20
    width, height = legend + 160, top + plot_h + 50
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' class='chart depth' width='{width}' height='{height}' "
        f"role='img' aria-label='{_e(title)}'>",
        f"<text x='{left}' y='16' font-weight='bold'>{_e(title)}</text>",
    ]

    def x(d: int) -> float:
        return left + step * (d - 0.5)

    def y(rate: float) -> float:
        return top + plot_h * (1 - rate)

    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            f"<line x1='{left}' x2='{legend - 10}' y1='{y(tick):.1f}' y2='{y(tick):.1f}' stroke='#ddd'/><text "
            f"x='4' y='{y(tick) + 4:.1f}' font-size='10'>{tick:g}</text>"
        )
    for d in range(1, depth + 1):
        parts.append(f"<text x='{x(d) - 4:.1f}' y='{top + plot_h + 16}' font-size='11'>{d}</text>")
    parts.append(f"<text x='{left}' y='{top + plot_h + 32}' font-size='11'>depth (user turns answered)</text>")
    for s, (name, colour, rows) in enumerate(series):
        points = [(row.depth, row.rate, row.interval) for row in rows if row.rate is not None]
        coords = " ".join(f"{x(d):.1f},{y(rate):.1f}" for d, rate, _ in points)
        parts.append(f"<polyline points='{coords}' fill='none' stroke='{colour}' stroke-width='2'/>")
        for d, rate, bounds in points:
            if bounds:
                parts.append(
                    f"<line x1='{x(d):.1f}' x2='{x(d):.1f}' y1='{y(bounds[0]):.1f}' y2='{y(bounds[1]):.1f}' "
                    f"stroke='{colour}' opacity='0.5'/>"
                )
            parts.append(
                f"<circle cx='{x(d):.1f}' cy='{y(rate):.1f}' r='3' fill='{colour}'><title>{_e(name)} at depth "
                f"{d}: {fmt_rate(rate)}</title></circle>"
            )
        parts.append(
            f"<rect x='{legend}' y='{top + s * 16}' width='10' height='10' fill='{colour}'/>"
            f"<text x='{legend + 14}' y='{top + 9 + s * 16}' font-size='11'>{_e(name)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)
