"""summary.json: the one typed shape of a finished run's summary, shared by every writer (a pytest
session, `merge`, `rejudge`, `import-seed`, `correct`) and reader (`compare`, baselines, notebooks).
Its blocks live beside it in this package."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from pytest_guardbench.document.base import Block, GivenKeysBlock
from pytest_guardbench.document.correction import Correction
from pytest_guardbench.document.execution import Execution
from pytest_guardbench.document.gate import BaselineComparison, Confidence, GateResult, SnapshotCheck
from pytest_guardbench.document.judging import JudgeQuality
from pytest_guardbench.document.metrics import RunMetrics, Usage
from pytest_guardbench.settings.config import Thresholds

SUMMARY_SCHEMA_VERSION = 1


class Completeness(Block):
    """Whether every selected case was measured; `reasons` says why not."""

    complete: bool = True
    reasons: list[str] = Field(default_factory=list)


class RunInfo(GivenKeysBlock):
    """Everything that depends on time or the run id (two runs over the same input differ only
    here), and where a rescored run came from. `execution`: per-process engine, cache and call
    counters, added up over the processes."""

    run_id: str
    started_at: str | None = None
    finished_at: str | None = None
    duration_s: float | None = None
    worker_crashes: list[str] = Field(default_factory=list)
    internal_errors: list[str] = Field(default_factory=list)
    execution: Execution = Field(default_factory=Execution)
    usage: Usage | None = None
    rejudged_from: str | None = None
    imported_from: str | None = None
    merged_from: list[str] = Field(default_factory=list)
    judge: str | None = None


class StackInfo(GivenKeysBlock):
    """What was measured: the three roles and the settings that change their answers."""

    guardrail: str
    tutor: str
    judge: str | None = None
    judge_id: str | None = None  # the identity of the judge the records name (`run.judge_quality.judge_id`)
    malformed_policy: str
    policy: str
    system_prompt: str | None = None
    samples: int | None = None
    judge_samples: int | None = None  # written only when the judge was asked more than once
    max_new_tokens: int | None = None
    variants: list[str] = Field(default_factory=list)


class Selection(GivenKeysBlock):
    """Which cases the run selected (a merge also names the shards it holds)."""

    keyword: str | None = None
    markexpr: str | None = None
    selected_cases: int | None = None
    total_cases: int | None = None
    partial: bool | None = None
    shard: str | None = None
    merged_shards: list[str] = Field(default_factory=list)
    absent_shards: list[str] = Field(default_factory=list)


class RunSummary(RunMetrics):
    """summary.json: the run's metrics (`RunMetrics`) and what the finish step adds. Blocks a run may
    or may not have (a baseline, judge quality, a snapshot) are optional; a plugin's own blocks
    (`pytest_guardbench_summary`) go under `extensions`, kept as they are."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = SUMMARY_SCHEMA_VERSION
    completeness: Completeness = Field(default_factory=Completeness)  # older summaries: no block, read as complete
    run: RunInfo
    stack: StackInfo
    selection: Selection
    thresholds: Thresholds
    gate: GateResult
    judge_quality: JudgeQuality | None = None
    confidence: Confidence | None = None
    baseline: BaselineComparison | None = None
    scorecard_snapshot: SnapshotCheck | None = None
    corrected: Correction | None = None  # the scorecards corrected by a person's labels of this run's replies
    extensions: dict[str, Any] = Field(default_factory=dict)  # blocks of plugins, by name

    @property
    def judge_id(self) -> str | None:
        """The identity of the judge that labelled the run: the one its records name or, in a run
        written before records named it, the one its judge check measured; None when unknown."""
        checked = self.judge_quality.judge_id if self.judge_quality is not None else None
        return self.stack.judge_id or checked

    def as_json(self) -> dict[str, object]:
        """The document as written to summary.json (absent optional blocks left out)."""
        absent = {
            k
            for k in ("judge_quality", "confidence", "baseline", "scorecard_snapshot", "corrected", "repeated_replies")
            if getattr(self, k) is None
        }
        if not self.extensions:
            absent.add("extensions")
        return self.model_dump(mode="json", exclude=absent)
