"""The kappa interval shared by the judge's kappa on a run's labels and the labellers' kappa: Wilson
bounds of the observed agreement mapped through kappa, never a single point."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_guardbench.audit.correction import judge_on_this_run
from pytest_guardbench.audit.units import AuditLabel, AuditUnit
from pytest_guardbench.scoring.agreement import kappa_interval
from pytest_guardbench.scoring.intervals import wilson_interval


def test_hand_computed_from_the_wilson_bounds():
    # 6 of 8 agree, chance 0.5: Wilson(6, 8) mapped through (p - 0.5) / 0.5.
    low, high = wilson_interval(6, 8) or (0.0, 0.0)
    found = kappa_interval(0.75, 0.5, 8)
    assert found is not None
    assert found[0] == pytest.approx((low - 0.5) / 0.5, abs=1e-5)
    assert found[1] == pytest.approx((high - 0.5) / 0.5, abs=1e-5)


def test_perfect_agreement_is_not_the_point_one():
    # 20 of 20 agree, half of each label: kappa 1, and the old normal interval was [1, 1].
    found = kappa_interval(1.0, 0.5, 20)
    assert found is not None
    low, high = found
    assert high == 1.0 and low < 0.9
    assert low == pytest.approx((wilson_interval(20, 20)[0] - 0.5) / 0.5, abs=1e-5)  # type: ignore[index]


def test_total_disagreement_is_not_a_point():
    # The old normal interval gave a point such as [-0.98, -0.98] when nothing agreed.
    found = kappa_interval(0.0, 0.495, 40)
    assert found is not None
    low, high = found
    # Nothing can agree less than nothing: the low end is kappa itself (-0.980); the high end moves.
    assert low == pytest.approx(-0.980198, abs=1e-6) and high > -0.85


def test_undefined_kappa_has_no_interval():
    assert kappa_interval(1.0, 1.0, 10) is None
    assert kappa_interval(0.5, 0.5, 0) is None


@given(table=st.tuples(*[st.integers(min_value=0, max_value=60)] * 4))
def test_never_a_point_and_always_holds_the_estimate(table: tuple[int, int, int, int]):
    # A 2x2 table of two raters' labels: (both yes, yes/no, no/yes, both no).
    both_yes, yes_no, no_yes, both_no = table
    n = sum(table)
    if n == 0:
        assert kappa_interval(0.0, 0.5, 0) is None
        return
    observed = (both_yes + both_no) / n
    first_yes, second_yes = (both_yes + yes_no) / n, (both_yes + no_yes) / n
    chance = first_yes * second_yes + (1 - first_yes) * (1 - second_yes)
    found = kappa_interval(observed, chance, n)
    if chance >= 1:
        assert found is None
        return
    assert found is not None
    low, high = found
    kappa = (observed - chance) / (1 - chance)
    assert -1.0 - 1e-9 <= low <= kappa + 1e-9 and kappa - 1e-9 <= high <= 1.0
    assert high - low > 0


def test_the_judge_on_a_run_it_agrees_with_everywhere_gets_a_real_interval():
    units = [AuditUnit(unit_id=f"u{i}", is_harmful=i < 10, judge_handled=i % 2 == 0) for i in range(20)]
    labels = [AuditLabel(unit_id=f"u{i}", handled=i % 2 == 0) for i in range(20)]
    result = judge_on_this_run(units, labels)
    assert result.cohen_kappa == 1.0
    assert result.kappa_ci_high == 1.0
    assert result.kappa_ci_low is not None and result.kappa_ci_low < 0.9
    wrong = judge_on_this_run(units, [AuditLabel(unit_id=f"u{i}", handled=i % 2 == 1) for i in range(20)])
    assert wrong.cohen_kappa == -1.0
    assert wrong.kappa_ci_low == -1.0 and wrong.kappa_ci_high is not None and wrong.kappa_ci_high > -0.8
