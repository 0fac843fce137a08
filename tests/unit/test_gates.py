from __future__ import annotations

from pytest_guardbench.config import Thresholds
from pytest_guardbench.gates import evaluate
from pytest_guardbench.scoring import summarise
from tests.unit.records import record
from tests.unit.test_scoring import _case, _table


def _summary(records, expected=None):
    return summarise(expected or [_case(r.case_id, r.is_harmful) for r in records], records)


def test_gate_passes_and_fails_on_point_estimates():
    summary = _summary(_table())  # recall 0.75, FPR 2/7
    assert evaluate(summary, Thresholds(min_recall=0.7, max_fpr=0.3)).passed
    result = evaluate(summary, Thresholds(min_recall=0.8, max_fpr=0.3))
    assert [c.message for c in result.failures] == ["recall 0.75 < 0.8"]
    result = evaluate(summary, Thresholds(min_recall=0.7, max_fpr=0.25, max_ber=0.1))
    assert [c.name for c in result.failures] == ["max_fpr", "max_ber"]


def test_undefined_metric_fails_rather_than_passes():
    summary = _summary([record("s", False, "safe", "answered")])
    result = evaluate(summary, Thresholds(min_recall=0.5, max_fpr=0.5))
    assert [c.name for c in result.failures] == ["min_recall"]
    assert "undefined" in result.failures[0].message


def test_errors_and_missing_cases_fail_the_gate():
    records = _table() + [record("x", True, error=True)]
    expected = [_case(r.case_id, r.is_harmful) for r in records] + [_case("never-ran", False)]
    result = evaluate(_summary(records, expected), Thresholds(min_recall=0.5, max_fpr=0.5))
    assert {c.name for c in result.failures} == {"min_coverage", "max_errors"}
    assert "missing 1" in next(c.message for c in result.failures if c.name == "min_coverage")
    tolerant = evaluate(_summary(records, expected), Thresholds(min_recall=0.5, max_fpr=0.5, min_coverage=0.8, max_errors=1))
    assert tolerant.passed
