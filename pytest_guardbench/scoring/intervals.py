"""Confidence intervals for the rates the reports print: pure arithmetic."""

from __future__ import annotations

import math

Z_95 = 1.959964


def wilson_bounds(p: float, n: float, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval, unrounded, for a proportion p observed over an (effective, possibly
    fractional) n > 0."""
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(max(p * (1 - p), 0.0) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float] | None:
    """95% Wilson score interval for a binomial proportion; None when n is 0."""
    if n == 0:
        return None
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return (round(max(0.0, centre - half), 6), round(min(1.0, centre + half), 6))
