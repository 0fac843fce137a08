"""The finish step of a run: from the records (streamed into a `RunTally` and the page's
`CasePicks` as they arrive) to the typed summary, its gate, and the run folder's files. The one
path every writer takes (a pytest session, `merge`, `rejudge`, `import-seed`), so a summary field
or gate check is added in one place."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_guardbench.records import Case, CaseRecord
from pytest_guardbench.results import html as html_report
from pytest_guardbench.results.shown_cases import CasePicks
from pytest_guardbench.results.artifacts import write_all
from pytest_guardbench.results.summary import (
    SUMMARY_SCHEMA_VERSION,
    Completeness,
    RunInfo,
    RunSummary,
    Selection,
    SnapshotCheck,
    Stack,
)
from pytest_guardbench.scoring.blocks import Confidence, LostReport, RunMetrics
from pytest_guardbench.scoring.baselines import BaselineComparison
from pytest_guardbench.scoring.gates import GateCheck, GateResult, evaluate
from pytest_guardbench.scoring.tally import RunTally
from pytest_guardbench.settings.config import Thresholds


@dataclass(frozen=True)
class AddedChecks:
    """Gate checks that need the metrics first, and the summary block that says what they compared."""

    checks: Sequence[GateCheck] = ()
    baseline: BaselineComparison | None = None
    scorecard_snapshot: SnapshotCheck | None = None


CheckBuilder = Callable[[RunMetrics], AddedChecks]


@dataclass
class RecordCounts:
    """What the finish step keeps of the records as they stream past: the metric counters and the
    report page's picks. Each record is classified once, by the tally, for both."""

    tally: RunTally
    picks: CasePicks

    @classmethod
    def under(cls, tally: RunTally) -> RecordCounts:
        return cls(tally, CasePicks(tally.policy))

    def add(self, record: CaseRecord) -> None:
        outcome, reason = self.tally.add(record)
        self.picks.add(record, outcome, reason)


def build_summary(
    tally: RunTally,
    thresholds: Thresholds,
    *,
    run: RunInfo,
    stack: Stack,
    selection: Selection,
    missing: Sequence[Case] = (),
    lost: Sequence[LostReport] = (),
    incomplete_reasons: Sequence[str] = (),
    warnings: Sequence[str] = (),
    judge_quality: dict[str, Any] | None = None,
    confidence: Confidence | None = None,
    checks: Sequence[CheckBuilder] = (),
) -> RunSummary:
    """Score what `tally` counted, gate it, and assemble the summary. `missing`: the selected cases
    that never reported. Every reason the run is incomplete is also a failing check: nothing says how
    the cases it did not measure would have scored."""
    metrics = tally.metrics(missing, lost)
    stack, judge_warnings = _named_judge(stack, tally.judge_ids)
    metrics = metrics.model_copy(update={"warnings": [*metrics.warnings, *warnings, *judge_warnings]})
    added = [build(metrics) for build in checks]
    extra: list[GateCheck] = [check for a in added for check in a.checks]
    extra.extend(GateCheck(name="complete", value=None, threshold=0.0, comparison=">=", status="fail", message=f"incomplete run: {reason}")
                 for reason in incomplete_reasons)  # fmt: skip
    gate = GateResult(checks=(*evaluate(metrics, thresholds).checks, *extra))
    summary = assemble_summary(metrics, gate, run=run, stack=stack, selection=selection, thresholds=thresholds,
                               incomplete_reasons=incomplete_reasons)  # fmt: skip
    blocks = {
        "judge_quality": judge_quality,
        "confidence": confidence,
        "baseline": next((a.baseline for a in added if a.baseline is not None), None),
        "scorecard_snapshot": next((a.scorecard_snapshot for a in added if a.scorecard_snapshot is not None), None),
    }
    return summary.model_copy(update={key: block for key, block in blocks.items() if block is not None})


def _named_judge(stack: Stack, judge_ids: set[str]) -> tuple[Stack, list[str]]:
    """The stack with `judge_id`, the one judge its records name (a rescored run's source summary may
    name another); none, with a warning, when the records name several (a resumed run whose judge
    changed between the two processes), since no one judge measured the run."""
    named = next(iter(judge_ids)) if len(judge_ids) == 1 else None
    if not judge_ids and stack.judge_id is None:
        return stack, []  # leave the stack's keys as given: records written before judge ids name none
    stack = Stack.model_validate({**stack.model_dump(), "judge_id": named})
    if len(judge_ids) > 1:
        return stack, [f"the records were labelled by {len(judge_ids)} different judges ({', '.join(sorted(judge_ids))}): "
                       "its metrics mix their labels"]  # fmt: skip
    return stack, []


def write_artifacts(run_dir: Path, summary: RunSummary, picks: CasePicks, *, manifest: dict[str, Any],
                    meta: dict[str, Any]) -> None:  # fmt: skip
    """summary.json, summary.md, variant_metrics.csv, data_manifest.json, meta.json and report.html
    (results.jsonl is written as records arrive, before this)."""
    write_all(run_dir, summary, manifest, meta)
    html_report.write_picked(run_dir, summary, picks)


def missing_reason(count: int) -> str:
    return f"{count} selected case(s) never reported"


def carried_reasons(summary: RunSummary | None) -> list[str]:
    """A summary's incomplete reasons other than its lost cases, which a rescored run counts anew."""
    if summary is None:
        return []
    lost = summary.coverage.missing.count
    return [r for r in summary.completeness.reasons if not (lost and r == missing_reason(lost))]


def assemble_summary(
    metrics: RunMetrics,
    gate: GateResult,
    *,
    run: RunInfo,
    stack: Stack,
    selection: Selection,
    thresholds: Thresholds,
    incomplete_reasons: Sequence[str] = (),
) -> RunSummary:
    """The summary.json document. `completeness` says whether every selected case was measured, so
    no reader takes an interrupted run, a run with lost cases or a merge short of shards for a whole one."""
    reasons = list(incomplete_reasons)
    missing = metrics.coverage.missing.count
    if missing:
        reasons.append(missing_reason(missing))
    return RunSummary(
        schema_version=SUMMARY_SCHEMA_VERSION,
        completeness=Completeness(complete=not reasons, reasons=reasons),
        run=run,
        stack=stack,
        selection=selection,
        thresholds=thresholds,
        gate=gate,
        **dict(metrics),
    )
