"""Correcting a finished run folder with a person's labels of its replies (`guardbench correct`): the
run's records stream through the finish again, with the labels, and summary.json, summary.md,
report.html and corrected.json are rewritten with the corrected numbers beside the judge-only ones.
results.jsonl, meta.json and the data manifest are left as they are."""

from __future__ import annotations

from pytest_guardbench.document.read import read_meta

from pathlib import Path

from pytest_guardbench.document.summary import RunSummary
from pytest_guardbench.document.read import iter_records, load_run
from pytest_guardbench.runfolder.finish import AddedChecks, RunFacts, RunFinish, carried_reasons, told_warnings
from pytest_guardbench.audit.labels import LabelsError, RunLabels
from pytest_guardbench.runfolder.lock import RunFolderLock, require_summary
from pytest_guardbench.runfolder.rescored import missing_cases_of
from pytest_guardbench.document.read import read_json_object
from pytest_guardbench.document.metrics import RunMetrics
from pytest_guardbench.scoring.policies import policy_named

# Checks a finish adds from outside the records (a baseline folder, a committed scorecard): carried as
# they were decided, since their inputs are not part of the run folder.
CARRIED_CHECKS = ("baseline", "scorecard")


def correct_run_folder(run_dir: Path, labels: RunLabels, min_judge_kappa: float = 0.6) -> RunSummary:
    """The run at `run_dir` scored again from its records with `labels`, its folder's summary and
    reports rewritten; returns the new summary. The folder is locked while it is rewritten, and a run
    being written or resumed (its lock held, or no summary.json yet) is refused (`ResumeError`), as
    are label rows outside the draw they record (`LabelsError`), before anything is written."""
    with RunFolderLock(run_dir, "correct it"):
        require_summary(run_dir)
        return _corrected(run_dir, labels, min_judge_kappa)


def _corrected(run_dir: Path, labels: RunLabels, min_judge_kappa: float) -> RunSummary:
    original = load_run(run_dir)
    finish = RunFinish(run_dir, policy_named(original.policy), original.thresholds, labels=labels, write_records=False)
    for record in iter_records(run_dir):
        finish.add(record)
    carried = [c for c in original.gate.checks if c.name.split("[")[0].split(".")[0] in CARRIED_CHECKS]

    def carry(_: RunMetrics) -> AddedChecks:
        return AddedChecks(checks=carried, baseline=original.baseline, scorecard_snapshot=original.scorecard_snapshot)

    facts = RunFacts(
        run=original.run,
        stack=original.stack,
        selection=original.selection,
        missing=missing_cases_of(original),
        lost=original.coverage.lost_reports,
        incomplete_reasons=carried_reasons(original),
        judge_quality=original.judge_quality,
        confidence=original.confidence,
        checks=[carry],
        min_judge_kappa=min_judge_kappa,
    )
    summary = finish.summary(facts)
    draw = summary.corrected.labels.draw if summary.corrected is not None else None
    if draw is not None and draw.outside:
        raise LabelsError(
            f"{labels.path}: {draw.outside} of the label rows are not in the draw they record ({draw.design}, "
            f"seed {draw.seed}, {draw.drawn} units drawn again from {run_dir}): they were not drawn as they say, "
            "so their inclusion probabilities are not the design's; label a draw of guardbench audit"
        )
    # Warnings the first finish was told (a demo stack, a served model) are not in the records.
    told = [w for w in told_warnings(original) if w not in summary.warnings]
    summary = summary.model_copy(update={"warnings": [*summary.warnings, *told], "extensions": original.extensions})
    finish.write(summary, manifest=read_json_object(run_dir / "data_manifest.json"), meta=read_meta(run_dir))
    return summary
