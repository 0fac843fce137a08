"""The finish step of a run: from the records (streamed into a `RunTally` and the page's
`CasePicks` as they arrive) to the typed summary, its gate, and the run folder's files. The one
path every writer takes (a pytest session, `merge`, `rejudge`, `import-seed`), so a summary field
or gate check is added in one place."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_guardbench.records import Case
from pytest_guardbench.results import html as html_report
from pytest_guardbench.results.artifacts import write_all
from pytest_guardbench.results.summary import SUMMARY_SCHEMA_VERSION, RunSummary
from pytest_guardbench.scoring.gates import GateCheck, GateResult, evaluate
from pytest_guardbench.scoring.tally import RunTally
from pytest_guardbench.settings.config import Thresholds

# Gate checks that need the metrics first (a scorecard snapshot): given them, a builder returns the
# summary blocks it adds and its checks.
CheckBuilder = Callable[[dict[str, Any]], tuple[dict[str, Any], Sequence[GateCheck]]]


def build_summary(
    tally: RunTally,
    thresholds: Thresholds,
    *,
    run: dict[str, Any],
    stack: dict[str, Any],
    selection: dict[str, Any],
    missing: Sequence[Case] = (),
    lost: Sequence[Mapping[str, str]] = (),
    incomplete_reasons: Sequence[str] = (),
    extra_metrics: Mapping[str, Any] | None = None,
    checks: Sequence[CheckBuilder] = (),
) -> RunSummary:
    """Score what `tally` counted, gate it, and assemble the summary. `missing`: the selected cases
    that never reported. Every reason the run is incomplete is also a failing check: nothing says how
    the cases it did not measure would have scored."""
    metrics = tally.metrics(missing, lost)
    metrics["guard_sweeps"] = tally.guard_sweeps()
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
    document = assemble_summary(metrics, gate, run=run, stack=stack, selection=selection, thresholds=thresholds.model_dump(),
                                incomplete_reasons=incomplete_reasons)  # fmt: skip
    return RunSummary.model_validate(document)


def write_artifacts(run_dir: Path, summary: RunSummary, picks: html_report.CasePicks, *, manifest: dict[str, Any],
                    meta: dict[str, Any]) -> None:  # fmt: skip
    """summary.json, summary.md, variant_metrics.csv, data_manifest.json, meta.json and report.html
    (results.jsonl is written as records arrive, before this)."""
    write_all(run_dir, summary, manifest, meta)
    html_report.write_picked(run_dir, summary, picks)


def missing_reason(count: int) -> str:
    return f"{count} selected case(s) never reported"


def carried_reasons(summary: Mapping[str, Any]) -> list[str]:
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
        "gate": gate.model_dump(mode="json"),
    }
