"""Writing a run folder from records already made (rejudge, merge, seed import): the records stream
through the finish step (`results.finish`) as in a pytest session."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from pytest_guardbench.settings.config import Thresholds
from pytest_guardbench.results.finish import RecordCounts, build_summary, write_artifacts
from pytest_guardbench.scoring.policies import ScoringPolicy
from pytest_guardbench.results.summary import RunInfo, RunSummary, Selection, Stack
from pytest_guardbench.scoring.blocks import Confidence
from pytest_guardbench.scoring.tally import RunTally
from pytest_guardbench.run.folder import ResultsWriter
from pytest_guardbench.records import Case, CaseRecord


def write_rescored_run(
    out: Path,
    records: Iterable[CaseRecord],
    original_summary: RunSummary | None,
    *,
    run: RunInfo,
    manifest: dict[str, Any],
    meta: dict[str, Any] | Callable[[], dict[str, Any]],
    policy: ScoringPolicy,
    missing: Sequence[Case] = (),
    incomplete_reasons: Sequence[str] = (),
    judge_quality: dict[str, Any] | None = None,
    confidence: Confidence | None = None,
) -> None:
    """Write `records` to a new run folder at `out` as they come, counting them, then score them
    under `policy` and write the rest of the folder. The expected set is the records plus
    `missing`, the cases the source selected but never measured. `meta` may be a function, for
    counts known only once every record went past. `judge_quality` and `confidence`: the judge
    check of the same judge, carried over (a merge of one run's shards)."""
    thresholds = original_summary.thresholds if original_summary else Thresholds()
    unknown = {"guardrail": "?", "tutor": "?", "malformed_policy": "?"}
    given = original_summary.stack.model_dump() if original_summary else {}
    stack = Stack.model_validate(
        {**unknown, **given, "policy": policy.name} | ({"judge": run.judge} if run.judge is not None else {})
    )
    out.mkdir(parents=True)
    counts = RecordCounts.under(RunTally(policy, thresholds.min_recall or 0.9))
    writer = ResultsWriter(out / "results.jsonl")
    try:
        for record in records:
            writer.write(record)
            counts.add(record)
    finally:
        writer.close()
    summary = build_summary(counts.tally, thresholds, run=run, stack=stack, selection=original_summary.selection if original_summary else Selection(),
                            missing=missing, incomplete_reasons=incomplete_reasons, judge_quality=judge_quality,
                            confidence=confidence)  # fmt: skip
    write_artifacts(out, summary, counts.picks, manifest=manifest, meta=meta() if callable(meta) else meta)


def missing_cases_of(summary: RunSummary) -> list[Case]:
    """The cases a run selected but never measured, as its summary lists them. Older summaries list
    only ids; those come back unlabelled, still counted as missing."""
    coverage = summary.coverage
    if coverage.missing_cases is not None:
        return list(coverage.missing_cases)
    return [Case(case_id=cid, pack="?", item_id=cid, base_prompt_id=cid, variant="?", prompt_text="?", is_harmful=None, label_source="unlabelled",
                 category=None, source_file="") for cid in coverage.missing_case_ids]  # fmt: skip


def run_id_of(summary: RunSummary | None, run_dir: Path) -> str:
    return summary.run.run_id if summary is not None and summary.run.run_id is not None else run_dir.name


def read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
