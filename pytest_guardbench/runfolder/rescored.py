"""Writing a run folder from records already made (rejudge, merge, seed import, correct): the records
stream through the run folder's one finish (`runfolder.finish.RunFinish`) as in a pytest session."""

from __future__ import annotations

from collections.abc import Mapping

from pytest_guardbench.document.meta import FolderMeta

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from pytest_guardbench.records import Case, CaseRecord
from pytest_guardbench.document.summary import RunInfo, RunSummary, Selection, StackInfo
from pytest_guardbench.runfolder.finish import RunFacts, RunFinish
from pytest_guardbench.audit.labels import RunLabels
from pytest_guardbench.document.gate import Confidence
from pytest_guardbench.document.judging import JudgeQuality
from pytest_guardbench.scoring.policies import ScoringPolicy
from pytest_guardbench.settings.config import Thresholds


def write_rescored_run(
    out: Path,
    records: Iterable[CaseRecord],
    original_summary: RunSummary | None,
    *,
    run: RunInfo,
    manifest: Mapping[str, object],
    meta: FolderMeta | Callable[[], FolderMeta] | None,
    policy: ScoringPolicy,
    missing: Sequence[Case] = (),
    incomplete_reasons: Sequence[str] = (),
    judge_quality: JudgeQuality | None = None,
    confidence: Confidence | None = None,
    labels: RunLabels | None = None,
    min_judge_kappa: float = 0.6,
    warnings: Sequence[str] = (),
) -> RunSummary:
    """Write `records` to a new run folder at `out` as they come, counting them, then score them
    under `policy` and write the rest of the folder. The expected set is the records plus
    `missing`, the cases the source selected but never measured. `meta` may be a function, for
    counts known only once every record went past. `judge_quality` and `confidence`: the judge
    check of the same judge, carried over (a merge of one run's shards). `labels`: a person's labels of
    these replies, which correct the new run's scorecards as they corrected the source's. `warnings`: what
    the source runs were told (`finish.told_warnings`), which no record says again."""
    thresholds = original_summary.thresholds if original_summary else Thresholds()
    unknown = {"guardrail": "?", "tutor": "?", "malformed_policy": "?"}
    given = original_summary.stack.model_dump() if original_summary else {}
    stack = StackInfo.model_validate(
        {**unknown, **given, "policy": policy.name} | ({"judge": run.judge} if run.judge is not None else {})
    )
    out.mkdir(parents=True)
    finish = RunFinish(out, policy, thresholds, labels=labels)
    try:
        for record in records:
            finish.add(record)
    finally:
        finish.close_records()
    facts = RunFacts(
        run=run,
        stack=stack,
        selection=original_summary.selection if original_summary else Selection(),
        missing=missing,
        incomplete_reasons=incomplete_reasons,
        warnings=warnings,
        judge_quality=judge_quality,
        confidence=confidence,
        min_judge_kappa=min_judge_kappa,
    )
    summary = finish.summary(facts)
    finish.write(summary, manifest=manifest, meta=meta() if callable(meta) else meta)
    return summary


def missing_cases_of(summary: RunSummary) -> list[Case]:
    """The cases a run selected but never measured, as its summary lists them. Older summaries list
    only ids; those come back unlabelled, still counted as missing."""
    coverage = summary.coverage
    if coverage.missing_cases is not None:
        return list(coverage.missing_cases)
    return [
        Case(
            case_id=cid,
            pack="?",
            item_id=cid,
            base_prompt_id=cid,
            variant="?",
            prompt_text="?",
            is_harmful=None,
            label_source="unlabelled",
            category=None,
            source_file="",
        )
        for cid in coverage.missing_case_ids
    ]


def run_id_of(summary: RunSummary | None, run_dir: Path) -> str:
    return summary.run.run_id if summary is not None and summary.run.run_id is not None else run_dir.name
