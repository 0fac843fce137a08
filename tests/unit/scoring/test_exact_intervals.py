"""Exact intervals for a handful of labels: by hand, against scipy where it is installed, and their
coverage by exact enumeration (never under the nominal level, unlike Wilson at small n)."""

from __future__ import annotations

import math

import pytest

from pytest_guardbench.errors import InternalError
from pytest_guardbench.scoring.exact_intervals import (
    beta_quantile,
    clopper_pearson_bounds,
    hypergeometric_bounds,
    regularized_beta,
    two_sided_alpha,
)
from pytest_guardbench.scoring.intervals import wilson_bounds


def test_alpha_of_the_normal_quantile():
    assert two_sided_alpha(1.959964) == pytest.approx(0.05, abs=1e-6)


def test_clopper_pearson_by_hand():
    # 0 of n: the upper bound solves (1 - p)^n = 0.025; n of n: the lower bound solves p^n = 0.025.
    assert clopper_pearson_bounds(0, 10) == pytest.approx((0.0, 1 - 0.025 ** (1 / 10)), abs=1e-7)
    assert clopper_pearson_bounds(5, 5) == pytest.approx((0.025 ** (1 / 5), 1.0), abs=1e-7)
    assert clopper_pearson_bounds(1, 1) == pytest.approx((0.025, 1.0), abs=1e-7)
    with pytest.raises(InternalError):
        clopper_pearson_bounds(3, 2)


def test_beta_functions_agree_with_scipy():
    stats = pytest.importorskip("scipy.stats")
    for a, b in ((3, 8), (0.5, 0.5), (12.4, 3.1), (1, 30)):
        for x in (0.01, 0.2, 0.5, 0.93):
            assert regularized_beta(x, a, b) == pytest.approx(stats.beta.cdf(x, a, b), abs=1e-9)
        for q in (0.025, 0.5, 0.975):
            assert beta_quantile(q, a, b) == pytest.approx(stats.beta.ppf(q, a, b), abs=1e-8)
    assert clopper_pearson_bounds(3, 10) == pytest.approx((stats.beta.ppf(0.025, 3, 8), stats.beta.ppf(0.975, 4, 7)))


def test_hypergeometric_by_hand():
    # 0 of 5 drawn from 10: M = 3 keeps P(X = 0) = C(7, 5) / C(10, 5) = 0.083; M = 4 gives 0.024 < 0.025.
    assert hypergeometric_bounds(0, 5, 10) == (0.0, 0.3)
    assert hypergeometric_bounds(5, 5, 10) == (0.7, 1.0)
    # A set labelled in full is known.
    assert hypergeometric_bounds(4, 10, 10) == (0.4, 0.4)
    # Drawn from a set much larger than the sample, it is Clopper–Pearson's.
    low, high = hypergeometric_bounds(3, 10, 200_000)
    assert (low, high) == pytest.approx(clopper_pearson_bounds(3, 10), abs=1e-4)
    with pytest.raises(InternalError):
        hypergeometric_bounds(2, 1, 5)


def _coverage(size: int, n: int, bounds) -> float:
    """The smallest coverage over every share M / size, summed exactly over the hypergeometric draws."""
    worst = 1.0
    for successes in range(size + 1):
        covered = 0.0
        for x in range(max(0, n - (size - successes)), min(n, successes) + 1):
            low, high = bounds(x, n, size)
            if low - 1e-12 <= successes / size <= high + 1e-12:
                covered += math.comb(successes, x) * math.comb(size - successes, n - x) / math.comb(size, n)
        worst = min(worst, covered)
    return worst


@pytest.mark.parametrize("size", [12, 40, 120])
@pytest.mark.parametrize("n", [1, 2, 3, 5, 9])
def test_the_exact_interval_never_covers_less_than_95_where_wilson_does(size: int, n: int):
    assert _coverage(size, n, hypergeometric_bounds) >= 0.95
    if n <= 2:
        # Wilson from one or two labels: 0.80 to 0.85 at its worst.
        assert _coverage(size, n, lambda x, k, _: wilson_bounds(x / k, k)) < 0.9
