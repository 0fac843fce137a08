"""The gate of a run (summary.json's `gate`: every check and the verdict) and the blocks its extra
checks are decided from: a baseline run, a committed scorecard snapshot, the confidence in the judge."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from pytest_guardbench.document.base import Block, GivenKeysBlock

CheckStatus = Literal["pass", "fail", "inconclusive"]


class GateCheck(Block):
    """One threshold, limit or comparison the run is held to; `passed` is written with it."""

    name: str
    value: float | None
    threshold: float
    comparison: Literal[">=", "<="]
    status: CheckStatus
    message: str
    interval: tuple[float, float] | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def passed(self) -> bool:
        return self.status == "pass"


class GateResult(Block):
    """Every check of a run; summary.json's `gate` block (with `passed` and `verdict`)."""

    checks: tuple[GateCheck, ...]

    @property
    def failures(self) -> list[GateCheck]:
        return [c for c in self.checks if c.status == "fail"]

    @property
    def undecided(self) -> list[GateCheck]:
        return [c for c in self.checks if c.status == "inconclusive"]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def passed(self) -> bool:
        return all(c.status == "pass" for c in self.checks)

    @property
    def inconclusive(self) -> bool:
        return not self.failures and bool(self.undecided)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def verdict(self) -> Literal["passed", "failed", "inconclusive"]:
        return "failed" if self.failures else "inconclusive" if self.undecided else "passed"


class BaselineComparison(BaseModel):
    """Per-case correctness paired with a previous run: the regressions, the improvements and
    whether the regressions are significant (summary.json's `baseline` block, with the run's folder)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_dir: str | None = None
    paired: int
    only_in_baseline: int
    only_in_current: int
    regressions: list[str]
    improvements: list[str]
    mcnemar_p: float
    alpha: float
    significant_regression: bool
    # The judges the two runs' records name: a difference between them is not a change of the system.
    judge_ids: list[str] = Field(default_factory=list)
    baseline_judge_ids: list[str] = Field(default_factory=list)


class Confidence(Block):
    """Whether the judge agreed well enough with human labels for the scorecard to be trusted."""

    level: Literal["low", "normal"]
    reason: str


class SnapshotCheck(GivenKeysBlock):
    """The committed scorecard file the run was held to (`stored`), or that it wrote (`written`)."""

    path: str
    tolerance: float
    stored: dict[str, Any] | None = None  # the file as committed: people edit it
    written: bool | None = None
