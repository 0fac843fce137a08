"""Properties of the corrected mean over any domain, any labels and any weights: an interval exactly
when something is labelled, holding its estimate inside [0, 1], and the truth itself when every unit
is labelled."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_guardbench.audit.estimator import NO_LABELS, LabelledValue, corrected_mean

verdicts = st.lists(st.sampled_from([0, 1, None]), min_size=1, max_size=60)


@st.composite
def domains(draw: st.DrawFn) -> tuple[list[int | None], list[LabelledValue], list[int]]:
    judge = draw(verdicts)
    truth = [draw(st.integers(0, 1)) for _ in judge]
    chosen = draw(st.lists(st.integers(0, len(judge) - 1), unique=True, max_size=len(judge)))
    clustered = draw(st.booleans())
    rows = [
        LabelledValue(
            position,
            truth[position],
            draw(st.floats(min_value=0.01, max_value=1.0)),
            f"c{position // 3}" if clustered else None,
        )
        for position in chosen
    ]
    known = draw(st.lists(st.integers(0, 1), max_size=5))
    return judge, rows, known


@given(domains())
def test_an_interval_exactly_when_labelled_holding_the_estimate(domain):
    judge, rows, known = domain
    metric = corrected_mean(judge, rows, known=known)
    assert metric.n_total == len(judge) + len(known) and metric.n_labelled == len(rows)
    if not rows:
        assert metric.note == NO_LABELS and metric.ci_low is None and metric.estimate is None
        return
    assert metric.note is None
    assert metric.ci_low is not None and metric.ci_high is not None and metric.estimate is not None
    assert 0.0 <= metric.ci_low <= metric.estimate + 1e-6 and metric.estimate <= metric.ci_high + 1e-6 <= 1.0 + 1e-6


@given(verdicts, st.data())
def test_every_unit_labelled_gives_the_truth(judge, data):
    truth = [data.draw(st.integers(0, 1)) for _ in judge]
    rows = [LabelledValue(i, t, 1.0) for i, t in enumerate(truth)]
    metric = corrected_mean(judge, rows)
    mean = sum(truth) / len(truth)
    # Known exactly; the bounds are rounded outwards to six digits.
    for value in (metric.estimate, metric.ci_low, metric.ci_high):
        assert value == pytest.approx(mean, abs=1.1e-6)
