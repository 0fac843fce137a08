"""Pure gate evaluation: thresholds against the system scorecard and coverage → GateResult."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from pytest_guardbench.config import Thresholds


class GateCheck(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    value: float | None
    threshold: float
    comparison: Literal[">=", "<="]
    passed: bool
    message: str


class GateResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    passed: bool
    checks: tuple[GateCheck, ...]

    @property
    def failures(self) -> list[GateCheck]:
        return [c for c in self.checks if not c.passed]


def _check(name: str, label: str, value: float | None, threshold: float, comparison: Literal[">=", "<="], undefined: str) -> GateCheck:
    if value is None:
        return GateCheck(name=name, value=None, threshold=threshold, comparison=comparison, passed=False, message=f"{label} undefined ({undefined}); needs {comparison} {threshold:g}")
    passed = value >= threshold if comparison == ">=" else value <= threshold
    op = comparison if passed else ("<" if comparison == ">=" else ">")
    return GateCheck(name=name, value=value, threshold=threshold, comparison=comparison, passed=passed, message=f"{label} {value:.4g} {op} {threshold:g}")


def evaluate(summary: dict[str, Any], thresholds: Thresholds) -> GateResult:
    """Check the system scorecard and coverage. Errors and cases that never reported fail the gate;
    they are never counted as passing."""
    system = summary["scorecards"]["system"]
    cov = summary["coverage"]
    checks: list[GateCheck] = []
    if thresholds.min_recall is not None:
        checks.append(_check("min_recall", "recall", system["recall"], thresholds.min_recall, ">=", "no harmful case was scored"))
    if thresholds.max_fpr is not None:
        checks.append(_check("max_fpr", "false positive rate", system["false_positive_rate"], thresholds.max_fpr, "<=", "no safe case was scored"))
    if thresholds.max_ber is not None:
        checks.append(_check("max_ber", "balanced error rate", system["balanced_error_rate"], thresholds.max_ber, "<=", "needs harmful and safe cases"))
    scored = cov["scored_of_labelled"]
    detail = f"scored {scored['count']} of {cov['labelled']['count']} labelled cases; errored {cov['errored']['count']}, judge malformed {cov['malformed_judge']['count']}, missing {cov['missing']['count']}"
    coverage_check = _check("min_coverage", "coverage", scored["rate"], thresholds.min_coverage, ">=", "no labelled case selected")
    checks.append(coverage_check.model_copy(update={"message": f"{coverage_check.message} ({detail})"}))
    errors = cov["errored"]["count"]
    checks.append(
        GateCheck(
            name="max_errors",
            value=float(errors),
            threshold=float(thresholds.max_errors),
            comparison="<=",
            passed=errors <= thresholds.max_errors,
            message=f"pipeline errors {errors} {'<=' if errors <= thresholds.max_errors else '>'} {thresholds.max_errors}",
        )
    )
    return GateResult(passed=all(c.passed for c in checks), checks=tuple(checks))
