"""Runs side by side: rows = runs (e.g. no guard, keyword, Granite), columns = variants, one pivot per
metric, plus the long form. Pure: reads typed summaries, returns text.

Every number says where it comes from (`compare_sources`): when every run was corrected by labels of
its own replies, recall, FPR, safe success and BER are the corrected ones, with their 95% intervals;
F1 and over-refusal, which no label corrects, stay judge-only and say so. Corrected runs beside
judge-only ones are refused unless `allow_mixed_sources` (then every run's judge-only numbers)."""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pytest_guardbench.results.compare_sources import (
    CompareError,
    corrected_cells,
    corrected_sources,
    metric_source,
    sources_line,
)
from pytest_guardbench.records import CaseRecord
from pytest_guardbench.document.summary import RunSummary
from pytest_guardbench.scoring.policies import policy_named
from pytest_guardbench.scoring.scorecard import CardTally, answer_flags, fmt_rate, score_record
from pytest_guardbench.document.scorecards import Scorecard

# metric key -> (title, how to read it from a system card, higher is better)
METRICS: dict[str, tuple[str, str, bool]] = {
    "balanced_error_rate": ("BER", "balanced_error_rate", False),
    "f1": ("F1", "f1", True),
    "recall": ("Harmful handled (recall)", "recall", True),
    "safe_success": ("Safe success (1 - FPR)", "false_positive_rate", True),
    "false_positive_rate": ("FPR (over-refusals and unsafe answers to safe prompts)", "false_positive_rate", False),
    "safe_prompt_overrefusal_rate": ("Safe prompt over-refusal", "safe_prompt_overrefusal_rate", False),
}
ALL = "(all)"


@dataclass(frozen=True)
class Comparison:
    runs: list[str]
    variants: list[str]
    cells: dict[tuple[str, str, str], tuple[float | None, int]]  # (run, variant, metric) -> (value, n)
    warnings: tuple[str, ...] = ()
    corrected: bool = False  # recall, FPR, safe success and BER are every run's audit-corrected ones
    # (run, variant, metric) -> the corrected 95% interval, where there is one
    intervals: dict[tuple[str, str, str], tuple[float, float]] = field(default_factory=dict)

    def value(self, run: str, variant: str, metric: str) -> float | None:
        return self.cells.get((run, variant, metric), (None, 0))[0]

    def source(self, metric: str) -> str:
        """Where a metric's numbers come from: `corrected` or `judge-only`."""
        return metric_source(metric, self.corrected)

    def sources_line(self) -> str:
        """The one line that says which kind of numbers the comparison shows."""
        return sources_line(self.corrected)

    def cell_text(self, run: str, variant: str, metric: str) -> str:
        bounds = self.intervals.get((run, variant, metric))
        value = fmt_rate(self.value(run, variant, metric))
        return value if bounds is None else f"{value} [{bounds[0]:.3f}, {bounds[1]:.3f}]"


def _metric(card: Scorecard, metric: str) -> float | None:
    raw = getattr(card, METRICS[metric][1])
    if raw is None:
        return None
    return 1.0 - raw if metric == "safe_success" else float(raw)


def compare(
    named: list[tuple[str, RunSummary]],
    mixed_judges: bool = False,
    case_ids: Sequence[set[str] | Mapping[str, str] | None] | None = None,
    allow_different_cases: bool = False,
    records: Callable[[int], Iterable[CaseRecord]] | None = None,
    allow_mixed_sources: bool = False,
) -> Comparison:
    """The runs side by side. Runs whose judges differ (`RunSummary.judge_id`, where both runs name
    theirs) are refused: a difference could be the judges' rather than the stacks'; `mixed_judges`
    compares them anyway, with a warning naming each run's judge.

    Runs that ran different cases (`case_ids`, each run's ids in order, None where unknown: then the
    case counts are compared) are refused too; `allow_different_cases` compares them on the cases all
    share, rescored from each run's `records(index)`, with a warning giving the overlap.

    Runs corrected by labels are compared on their corrected numbers when every run is; a corrected
    run beside a judge-only one is refused, unless `allow_mixed_sources` (then all judge-only)."""
    if len(named) < 2:
        raise CompareError("give at least two run folders")
    names = [name for name, _ in named]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise CompareError(f"two runs are both called {duplicated[0]!r}; name them with --name")
    first_name, first = named[0]
    for name, summary in named:
        if summary.schema_version != first.schema_version:
            raise CompareError(
                f"{name}: summary schema {summary.schema_version} differs from {first_name}'s {first.schema_version}"
            )
        if summary.policy != first.policy:
            raise CompareError(
                f"{name}: scored under policy {summary.policy}, but {first_name} under {first.policy}; "
                "rescore one of them (guardbench rejudge --policy)"
            )
        if summary.metric_definitions != first.metric_definitions:
            mine, theirs = summary.metric_definitions.model_dump(), first.metric_definitions.model_dump()
            differing = sorted(k for k in mine if mine[k] != theirs[k])
            raise CompareError(
                f"{name}: its metrics are defined differently from {first_name}'s ({', '.join(differing)})"
            )
    warnings = _judge_warnings(named, mixed_judges)
    corrected, source_warnings = corrected_sources(named, allow_mixed_sources)
    warnings += source_warnings
    shared = _shared_cases(named, case_ids, allow_different_cases, records is not None)
    if shared is not None and corrected:
        corrected = False  # a run's corrected numbers are of all its cases, not of the shared ones
        warnings += ("each run's corrected numbers are of all its cases: on the shared cases, judge-only numbers",)
    columns_of: list[dict[str, Scorecard]] = []
    for index, (name, summary) in enumerate(named):
        if shared is None or records is None:
            columns_of.append({ALL: summary.scorecards.system, **{v: c.system for v, c in summary.per_variant.items()}})
        else:
            columns_of.append(_shared_cards(records(index), shared[1], summary.policy))
    if shared is not None:
        warnings += (shared[0],)
    variants = sorted({v for columns in columns_of for v in columns if v != ALL})
    cells: dict[tuple[str, str, str], tuple[float | None, int]] = {}
    intervals: dict[tuple[str, str, str], tuple[float, float]] = {}
    for (name, summary), columns in zip(named, columns_of, strict=True):
        for variant, card in columns.items():
            for metric in METRICS:
                cells[(name, variant, metric)] = (_metric(card, metric), card.n)
            if corrected:
                for metric, (value, bounds) in corrected_cells(summary, None if variant == ALL else variant).items():
                    cells[(name, variant, metric)] = (value, card.n)
                    if bounds is not None:
                        intervals[(name, variant, metric)] = bounds
    return Comparison(
        runs=names, variants=[ALL, *variants], cells=cells, warnings=warnings, corrected=corrected, intervals=intervals
    )


def _shared_cases(
    named: list[tuple[str, RunSummary]],
    case_ids: Sequence[set[str] | Mapping[str, str] | None] | None,
    allow: bool,
    rescore: bool,
) -> tuple[str, set[str]] | None:
    """None when every run ran the same cases; else the overlap note and the shared ids (allowed), or
    a CompareError that gives the overlap. Where `case_ids` maps each id to its prompt's digest, an id
    whose prompt differs between the runs is another case in each: not shared."""
    ids = list(case_ids) if case_ids is not None else [None] * len(named)
    if any(run_ids is None for run_ids in ids):  # no results.jsonl: the counts are all there is to compare
        counts = [(name, summary.coverage.expected) for name, summary in named]
        if len({n for _, n in counts}) <= 1:
            return None
        listed = ", ".join(f"{name} {n}" for name, n in counts)
        raise CompareError(
            f"the runs ran different numbers of cases ({listed}), and without each run's results.jsonl the shared "
            "cases cannot be found; compare runs of the same cases"
        )
    known = [set(run_ids) for run_ids in ids if run_ids is not None]
    reworded = _reworded(ids, set.intersection(*known))
    if all(run_ids == known[0] for run_ids in known) and not reworded:
        return None
    shared = set.intersection(*known) - set(reworded)
    overlap = ", ".join(f"{name} {len(run_ids)}" for (name, _), run_ids in zip(named, known, strict=True))
    overlap = f"cases per run: {overlap}; shared by all: {len(shared)}"
    if reworded:
        overlap += (
            f"; {len(reworded)} case(s) have the same id but another prompt text in another run "
            f"(e.g. {reworded[0]}), so they are not shared"
        )
    if not allow:
        raise CompareError(
            f"the runs ran different cases ({overlap}), so a difference may be the cases' rather than the stacks'; "
            "pass --allow-different-cases to compare them on the shared cases only"
        )
    if not shared or not rescore:
        raise CompareError(f"the runs share no case to compare ({overlap})" if not shared else "no records to rescore")
    return f"the runs ran different cases ({overlap}): compared on the {len(shared)} shared cases only", shared


def _reworded(ids: Sequence[set[str] | Mapping[str, str] | None], common: set[str]) -> list[str]:
    """The ids every run has whose prompt text differs between runs (where the prompts are known), sorted."""
    prompts = [run_ids for run_ids in ids if isinstance(run_ids, Mapping)]
    if len(prompts) < 2:
        return []
    return sorted(case_id for case_id in common if len({p[case_id] for p in prompts}) > 1)


def _shared_cards(records: Iterable[CaseRecord], shared: set[str], policy: str) -> dict[str, Scorecard]:
    """The system scorecard, whole and per variant, of the records of `shared` cases, under `policy`."""
    scoring = policy_named(policy)
    tallies: dict[str, CardTally] = {ALL: CardTally()}
    for record in records:
        if record.case_id not in shared:
            continue
        outcome, _ = score_record(record, scoring)
        if outcome is not None:
            for key in (ALL, record.variant):
                tallies.setdefault(key, CardTally()).add(outcome, *answer_flags(record))
    return {key: tally.card() for key, tally in tallies.items()}


def _judge_warnings(named: list[tuple[str, RunSummary]], mixed_judges: bool) -> tuple[str, ...]:
    known = [(name, s.judge_id, s.stack.judge) for name, s in named if s.judge_id is not None]
    if len({judge_id for _, judge_id, _ in known}) <= 1:
        return ()
    judges = ", ".join(f"{name}: {judge} ({judge_id})" for name, judge_id, judge in known)
    if not mixed_judges:
        (first, first_id, _), (name, judge_id, _) = known[0], next(k for k in known if k[1] != known[0][1])
        raise CompareError(
            f"{name} was judged by judge {judge_id}, but {first} by {first_id}, so a difference may be the judges' "
            f"rather than the stacks' ({judges}); rejudge one with the other's judge (guardbench rejudge), or pass "
            "--mixed-judges to compare them anyway"
        )
    return (f"the runs were judged by different judges ({judges}): a difference may be the judges', not the stacks'",)


def long_csv(comparison: Comparison) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["run", "variant", "metric", "value", "n", "source", "ci_low", "ci_high"])
    for run in comparison.runs:
        for variant in comparison.variants:
            for metric in METRICS:
                if (run, variant, metric) in comparison.cells:
                    value, n = comparison.cells[(run, variant, metric)]
                    bounds = comparison.intervals.get((run, variant, metric))
                    low, high = ("", "") if bounds is None else (f"{bounds[0]:.6f}", f"{bounds[1]:.6f}")
                    number = "" if value is None else f"{value:.6f}"
                    writer.writerow([run, variant, metric, number, n, comparison.source(metric), low, high])
    return out.getvalue()


def markdown(comparison: Comparison) -> str:
    lines: list[str] = [f"**{comparison.sources_line()}.**", ""]
    lines += [line for warning in comparison.warnings for line in (f"**Warning:** {warning}.", "")]
    for metric, (title, _, higher) in METRICS.items():
        source = comparison.source(metric)
        lines += [f"## {title} [{source}] ({'higher' if higher else 'lower'} is better)", ""]
        lines.append("| run | " + " | ".join(comparison.variants) + " | source |")
        lines.append("|---|" + "---|" * (len(comparison.variants) + 1))
        for run in comparison.runs:
            cells = " | ".join(comparison.cell_text(run, v, metric) for v in comparison.variants)
            lines.append(f"| {run} | {cells} | {source} |")
        lines.append("")
    return "\n".join(lines)


def _colour(value: float | None, higher_is_better: bool) -> str:
    """Red (bad) to green (good) for a rate in [0, 1]; grey when undefined."""
    if value is None:
        return "#dddddd"
    good = value if higher_is_better else 1.0 - value
    good = min(1.0, max(0.0, good))
    red, green = int(230 - 130 * good), int(110 + 110 * good)
    return f"rgb({red},{green},110)"


def heatmap_html(comparison: Comparison, title: str = "guardbench comparison") -> str:
    """One self-contained page: a coloured table per metric (no scripts, no external files)."""
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title>",
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:2em}"
        "td,th{border:1px solid #999;padding:4px 8px;text-align:center}th{background:#f0f0f0}</style>",
        f"</head><body><h1>{html.escape(title)}</h1>",
        f"<p id='sources' data-corrected='{'yes' if comparison.corrected else 'no'}'>"
        f"<b>{html.escape(comparison.sources_line())}.</b></p>",
        *(f"<p class='warning'><b>Warning:</b> {html.escape(warning)}.</p>" for warning in comparison.warnings),
    ]
    for metric, (name, _, higher) in METRICS.items():
        source = comparison.source(metric)
        parts.append(
            f"<h2>{html.escape(name)} [{source}] ({'higher' if higher else 'lower'} is better)</h2><table><tr>"
            "<th>run</th>"
        )
        parts += [f"<th>{html.escape(v)}</th>" for v in comparison.variants]
        parts.append("<th>source</th></tr>")
        for run in comparison.runs:
            parts.append(f"<tr><th>{html.escape(run)}</th>")
            for variant in comparison.variants:
                value = comparison.value(run, variant, metric)
                parts.append(
                    f"<td data-metric='{metric}' data-source='{source}' style='background:{_colour(value, higher)}'>"
                    f"{html.escape(comparison.cell_text(run, variant, metric))}</td>"
                )
            parts.append(f"<td>{source}</td></tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    return "".join(parts) + "\n"
