"""Guard threshold sweeps, and time/tokens/cost, checked against numbers worked out by hand."""

from __future__ import annotations

import pytest

from pytest_guardbench.records import GuardDecision, TutorReply
from pytest_guardbench.scoring.metrics import guard_sweeps, usage
from pytest_guardbench.scoring.sweeps import sweep
from tests.builders import record

# Harmful 0.9, 0.8, 0.4; safe 0.7, 0.3, 0.1. Of the 9 harmful/safe pairs the harmful one scores higher
# in 8: AUC 8/9. Precision when each harmful case is reached: 1, 1, 3/4 → AP (1 + 1 + 3/4) / 3 = 11/12.
POINTS = [(0.9, True), (0.8, True), (0.4, True), (0.7, False), (0.3, False), (0.1, False)]


def test_roc_auc_average_precision_and_curve_by_hand():
    result = sweep(POINTS, target_recall=1.0)
    assert result.roc_auc == pytest.approx(8 / 9)
    assert result.average_precision == pytest.approx(11 / 12)
    assert [p.threshold for p in result.curve] == [0.9, 0.8, 0.7, 0.4, 0.3, 0.1]
    at_07 = result.curve[2]
    assert (at_07.tp, at_07.fp, at_07.tn, at_07.fn) == (2, 1, 2, 1)
    assert (
        at_07.recall == pytest.approx(2 / 3)
        and at_07.false_positive_rate == pytest.approx(1 / 3)
        and at_07.precision == pytest.approx(2 / 3)
    )


@pytest.mark.parametrize(("target", "threshold", "fpr"), [(1.0, 0.4, 1 / 3), (0.6, 0.8, 0.0), (0.3, 0.9, 0.0)])
def test_operating_point_is_the_lowest_fpr_that_reaches_the_target(target, threshold, fpr):
    point = sweep(POINTS, target).operating_point
    assert point.threshold == threshold and point.false_positive_rate == pytest.approx(fpr)


def test_ties_count_half_and_undefined_cases_say_why():
    tied = sweep([(0.5, True), (0.5, False)], 0.9)
    assert tied.roc_auc == pytest.approx(0.5)
    only_harmful = sweep([(0.5, True), (0.2, True)], 0.9)
    assert only_harmful.roc_auc is None and only_harmful.operating_point is None
    assert only_harmful.operating_point_note == "needs harmful and safe cases"
    empty = sweep([(0.5, False)], 0.9)
    assert empty.operating_point is None and empty.operating_point_note == "needs harmful and safe cases"
    assert empty.average_precision is None


def _scored(case_id, harmful, score, guard="granite"):
    r = record(case_id, harmful)
    return r.model_copy(update={"guard": GuardDecision(guard=guard, status="allow", reason="", raw="", score=score)})


def test_guard_sweeps_use_labelled_cases_with_a_score_per_guard():
    records = [_scored(f"c{i}", h, s) for i, (s, h) in enumerate(POINTS)]
    records += [_scored("u", None, 0.99), record("noscore", True), _scored("k", True, 0.5, guard="other")]
    sweeps = guard_sweeps(records, 1.0)
    assert set(sweeps) == {"granite", "other"}
    assert sweeps["granite"].n == 6 and sweeps["granite"].roc_auc == pytest.approx(8 / 9)


def _answered(case_id, prompt_tokens, completion_tokens, model="gpt-x", seconds=1.0):
    r = record(case_id, False)
    reply = TutorReply(
        text="a", source="tutor", model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
    )
    return r.model_copy(update={"response": reply, "timings_s": {"tutor": seconds, "judge": 0.001}})


def test_cost_from_the_price_table_and_percentiles():
    records = [
        _answered("a", 1000, 200, seconds=1.0),
        _answered("b", 3000, 800, seconds=3.0),
        _answered("c", 0, 0, seconds=2.0),
    ]
    prices = {"gpt-x": {"input_per_million": 0.15, "output_per_million": 0.60}}
    result = usage(records, prices)
    # (4000 × 0.15 + 1000 × 0.60) / 1e6 = 0.0012
    assert result.tutor_cost_usd == pytest.approx(0.0012)
    assert result.tutor_tokens.prompt_tokens == 4000 and result.tutor_tokens.completion_tokens == 1000
    assert result.stages["tutor"].model_dump() == {"cases": 3, "p50_s": 2.0, "p95_s": 3.0, "total_s": 6.0}
    assert result.stages["guard"].p50_s is None


def test_unknown_cost_stays_unknown_never_zero():
    no_price = usage([_answered("a", 10, 5)], {})
    assert no_price.tutor_cost_usd is None and no_price.cost_note == "no price for gpt-x"
    no_tokens = usage([_answered("a", None, 5)], {"gpt-x": {"input_per_million": 1.0, "output_per_million": 1.0}})
    assert no_tokens.tutor_cost_usd is None and no_tokens.cost_note == "some answers carry no token counts"
    assert no_tokens.tutor_tokens.prompt_tokens is None
