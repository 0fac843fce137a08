"""Finishing a run: from one record per case to the typed summary, the gate and the run folder.
The one path every writer takes (a pytest session, `merge`, `rejudge`, `import-seed`), so a summary
field or gate check is added in one place."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_guardbench.results import html as html_report
from pytest_guardbench.settings.config import Thresholds
from pytest_guardbench.scoring.gates import GateCheck, GateResult, evaluate
from pytest_guardbench.scoring.policies import ScoringPolicy
from pytest_guardbench.results.artifacts import assemble_summary, write_all
from pytest_guardbench.results.summary import RunSummary
from pytest_guardbench.records import Case, CaseRecord
from pytest_guardbench.scoring.metrics import summarise
from pytest_guardbench.scoring.sweeps import guard_sweeps
from pytest_guardbench.cases.variants import family_of

# Gate checks that need the metrics first (a scorecard snapshot): given them, a builder returns the
# summary blocks it adds and its checks.
CheckBuilder = Callable[[dict[str, Any]], tuple[dict[str, Any], Sequence[GateCheck]]]


def finish_run(
    expected: Sequence[Case],
    records: Sequence[CaseRecord],
    policy: ScoringPolicy,
    thresholds: Thresholds,
    *,
    run: dict[str, Any],
    stack: dict[str, Any],
    selection: dict[str, Any],
    lost: Sequence[dict[str, str]] = (),
    incomplete_reasons: Sequence[str] = (),
    extra_metrics: Mapping[str, Any] | None = None,
    checks: Sequence[CheckBuilder] = (),
) -> tuple[RunSummary, GateResult]:
    """Score `records` against the `expected` cases under `policy`, gate them, and assemble the
    summary. Every reason the run is incomplete is also a failing check: nothing says how the cases
    it did not measure would have scored."""
    ordered = sorted(
        (r if r.variant_family else r.model_copy(update={"variant_family": family_of(r.variant)}) for r in records),
        key=lambda r: r.case_id,
    )
    metrics = summarise(expected, ordered, policy, lost)
    metrics["guard_sweeps"] = guard_sweeps(ordered, thresholds.min_recall or 0.9)
    for key, value in (extra_metrics or {}).items():
        if key == "warnings":
            metrics["warnings"].extend(value)
        else:
            metrics[key] = value
    extra: list[GateCheck] = []
    for build in checks:
        added, built = build(metrics)
        metrics.update(added)
        extra.extend(built)
    extra.extend(GateCheck(name="complete", value=None, threshold=0.0, comparison=">=", status="fail", message=f"incomplete run: {reason}")
                 for reason in incomplete_reasons)  # fmt: skip
    gate = GateResult(checks=(*evaluate(metrics, thresholds).checks, *extra))
    summary = assemble_summary(metrics, gate, run=run, stack=stack, selection=selection, thresholds=thresholds.model_dump(),
                               incomplete_reasons=incomplete_reasons)  # fmt: skip
    return RunSummary.model_validate(summary), gate


def write_run(run_dir: Path, summary: RunSummary, records: Sequence[CaseRecord], policy: ScoringPolicy, *, manifest: dict[str, Any],
              meta: dict[str, Any]) -> None:  # fmt: skip
    """summary.json, summary.md, variant_metrics.csv, data_manifest.json, meta.json and report.html
    (results.jsonl is written by whoever has the records: streamed by a session, at once by the CLI)."""
    write_all(run_dir, summary, manifest, meta)
    html_report.write(run_dir, summary, records, policy)
