"""The gate checks a run folder is held to besides its thresholds: a previous run's folder
(`--guardbench-baseline`, compared case by case) and a committed scorecard file
(`--guardbench-scorecard-snapshot`). Each is built once the metrics exist (`finish.CheckBuilder`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from pytest_guardbench._util.files import write_files
from pytest_guardbench.records import CaseRecord
from pytest_guardbench.document.gate import SnapshotCheck
from pytest_guardbench.document.read import iter_records
from pytest_guardbench.runfolder.finish import AddedChecks, CheckBuilder
from pytest_guardbench.scoring import baselines
from pytest_guardbench.document.metrics import RunMetrics
from pytest_guardbench.scoring.policies import ScoringPolicy
from pytest_guardbench.scoring.scorecard import score_record


def baseline_check(
    handled: Mapping[str, bool], judge_ids: Iterable[str], baseline_dir: Path, policy: ScoringPolicy
) -> CheckBuilder:
    """The paired comparison of this run's cases (`handled`: case id → handled correctly, as the
    finish counted them) with the baseline run's, rescored under this run's policy so the pairs
    compare like with like."""

    def build(_: RunMetrics) -> AddedChecks:
        theirs, their_judges = _handled(iter_records(baseline_dir), policy)
        comparison = baselines.compare_with_baseline(dict(handled), theirs).model_copy(
            update={"run_dir": str(baseline_dir), "judge_ids": sorted(judge_ids), "baseline_judge_ids": their_judges}
        )
        return AddedChecks(checks=[baselines.baseline_check(comparison)], baseline=comparison)

    return build


def _handled(records: Iterable[CaseRecord], policy: ScoringPolicy) -> tuple[dict[str, bool], list[str]]:
    """case id → handled correctly for every scored record, and the judges the records name."""
    result, judges = {}, set()
    for record in records:
        handled = score_record(record, policy).handled
        if handled is not None:
            result[record.case_id] = handled
        if record.judge_id is not None:
            judges.add(record.judge_id)
    return result, sorted(judges)


def scorecard_snapshot_check(path: Path, tolerance: float, update: bool) -> CheckBuilder:
    """Compare with the committed scorecard file; write it when missing or on `update` (--snapshot-update)."""

    def build(metrics: RunMetrics) -> AddedChecks:
        current = baselines.scorecard_snapshot(metrics)
        if path.is_file() and not update:
            stored = json.loads(path.read_text(encoding="utf-8"))
            return AddedChecks(
                checks=baselines.compare_scorecard(current, stored, tolerance),
                scorecard_snapshot=SnapshotCheck(path=str(path), tolerance=tolerance, stored=stored),
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        write_files([(path, json.dumps(current, indent=2, sort_keys=True) + "\n")])
        return AddedChecks(scorecard_snapshot=SnapshotCheck(path=str(path), tolerance=tolerance, written=True))

    return build
