"""Exact (Clopper–Pearson-type) confidence intervals for a proportion from a handful of labels:
`hypergeometric_bounds` for a simple random sample drawn without replacement from a finite set, and
`clopper_pearson_bounds` for an effective sample size that need not be a whole number (Korn and
Graubard 1998: a weighted or clustered sample read as n_eff labels). Both cover at least their
nominal level for every true proportion, which the Wilson interval does not at small n (one label:
0.80 at p = 0.2). Pure arithmetic, no numpy or scipy.
"""

from __future__ import annotations

import math

from pytest_guardbench.errors import InternalError
from pytest_guardbench.scoring.intervals import Z_95

_ITERATIONS = 100  # bisection steps; each halves the bracket, so 100 is far past float precision


def two_sided_alpha(z: float = Z_95) -> float:
    """The two-sided error rate of a normal quantile: 0.05 for z = 1.96."""
    return math.erfc(z / math.sqrt(2))


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def _at_least(x: int, n: int, successes: int, size: int) -> float:
    """P(X >= x) for X hypergeometric: n drawn from `size`, of which `successes` are successes."""
    top = min(n, successes)
    if x > top:
        return 0.0
    base = _log_comb(size, n)
    return min(
        1.0,
        sum(math.exp(_log_comb(successes, k) + _log_comb(size - successes, n - k) - base) for k in range(x, top + 1)),
    )


def _at_most(x: int, n: int, successes: int, size: int) -> float:
    """P(X <= x) for the same hypergeometric X."""
    return 1.0 - _at_least(x + 1, n, successes, size)


def hypergeometric_bounds(x: int, n: int, size: int, z: float = Z_95) -> tuple[float, float]:
    """Exact interval for the share M / size of successes in a finite set of `size`, from x successes
    in a simple random sample of n drawn without replacement: every M that either one-sided test at
    alpha / 2 keeps. Conservative: it covers at least 1 - alpha for every M."""
    if not 0 <= x <= n <= size or size == 0:
        raise InternalError(f"need 0 <= x <= n <= size and size > 0, got x={x}, n={n}, size={size}")
    half = two_sided_alpha(z) / 2
    # The set holds at least x successes and at least n - x failures.
    fewest, most = x, size - (n - x)
    low = fewest
    if x > 0:
        # P(X >= x | M) grows with M: the smallest M the test keeps.
        below, above = fewest, most
        while below < above:
            middle = (below + above) // 2
            below, above = (below, middle) if _at_least(x, n, middle, size) > half else (middle + 1, above)
        low = below
    high = most
    if x < n:
        # P(X <= x | M) falls as M grows: the largest M the test keeps.
        below, above = fewest, most
        while below < above:
            middle = (below + above + 1) // 2
            below, above = (middle, above) if _at_most(x, n, middle, size) > half else (below, middle - 1)
        high = below
    return low / size, high / size


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 300):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return result


def regularized_beta(x: float, a: float, b: float) -> float:
    """I_x(a, b), the regularized incomplete beta function (the Beta(a, b) distribution function)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def beta_quantile(q: float, a: float, b: float) -> float:
    """The q-quantile of Beta(a, b), by bisection on the distribution function."""
    low, high = 0.0, 1.0
    for _ in range(_ITERATIONS):
        middle = (low + high) / 2
        low, high = (middle, high) if regularized_beta(middle, a, b) < q else (low, middle)
    return (low + high) / 2


def clopper_pearson_bounds(successes: float, n: float, z: float = Z_95) -> tuple[float, float]:
    """Clopper–Pearson interval for `successes` of `n`, both possibly fractional (Korn and Graubard's
    form for a weighted or clustered sample: n is the effective sample size, successes = p * n)."""
    if not 0 <= successes <= n or n <= 0:
        raise InternalError(f"need 0 <= successes <= n and n > 0, got {successes} of {n}")
    half = two_sided_alpha(z) / 2
    low = 0.0 if successes <= 0 else beta_quantile(half, successes, n - successes + 1)
    high = 1.0 if successes >= n else beta_quantile(1 - half, successes + 1, n - successes)
    return low, high
