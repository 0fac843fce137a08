"""One judge-verdict cell of a domain (e.g. the harmful cases the judge called handled): its labelled
units' weighted mean and a 95% interval for the mean over the whole cell (`cell_interval`).

Three regimes, chosen by what was labelled, never by the labels:
- at least `SMALL_CELL` labels drawn one by one: Wilson with the finite-population correction, a
  continuity correction that grows with the sampled share, and Brown, Cai and DasGupta's Poisson
  bound for a rare outcome seen one to three times (`_wilson_cell`);
- fewer labels: an exact interval (`scoring.exact_intervals`), the hypergeometric one when every
  label has the same weight, else Clopper–Pearson on the effective sample size (Korn and Graubard
  1998), since Wilson under-covers there (one label: 0.80 at p = 0.2; three: 0.89);
- labels drawn in clusters (whole conversations): Clopper–Pearson on a cluster-adjusted effective
  sample size (`clustered_size`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pytest_guardbench.scoring.exact_intervals import clopper_pearson_bounds, hypergeometric_bounds
from pytest_guardbench.scoring.intervals import wilson_bounds

# Below this many labels in a cell its interval is exact: Wilson's coverage there dips under 0.90.
SMALL_CELL = 10


def weighted_mean(values: Sequence[float], weights: Sequence[float]) -> tuple[float, float]:
    """(weighted mean, Kish effective sample size)."""
    total = sum(weights)
    mean = sum(w * v for v, w in zip(values, weights, strict=True)) / total
    return mean, total * total / sum(w * w for w in weights)


def _poisson_bound(events: int) -> float:
    """lambda with P(Poisson(lambda) >= events) = 0.05, for the modified Wilson bound (events >= 1)."""
    low, high = 0.0, float(events)
    for _ in range(60):  # bisection; P(>= events) grows with lambda
        mid = (low + high) / 2
        below = sum(math.exp(-mid) * mid**j / math.factorial(j) for j in range(events))
        low, high = (low, mid) if 1 - below > 0.05 else (mid, high)
    return (low + high) / 2


_POISSON = {events: _poisson_bound(events) for events in (1, 2, 3)}  # 0.0513, 0.3554, 0.8177


def _modified_wilson(p: float, n: float, successes: float, count: int, z: float) -> tuple[float, float]:
    """Wilson, with Brown, Cai and DasGupta's (2001) modification: when the rarer outcome occurs
    1..x* times among `count` labels (x* = 2 up to 50 labels, 3 up to 100), its near bound is the
    one-sided Poisson one, lambda_x / n, if that is wider. Wilson alone covers p = 0.99 from 13
    labels only ~89% of the time: one failure puts its upper bound at 0.986."""
    low, high = wilson_bounds(p, n, z)
    most = 2 if count <= 50 else 3 if count <= 100 else 0
    failures = count - successes
    if successes in _POISSON and successes <= most and successes < failures:
        low = min(low, _POISSON[int(successes)] / n)
    if failures in _POISSON and failures <= most and failures < successes:
        high = max(high, 1 - _POISSON[int(failures)] / n)
    return low, high


def _wilson_cell(values: Sequence[float], mean: float, n_eff: float, size: int, z: float) -> tuple[float, float]:
    """Labels are drawn without replacement, so the Wilson n carries the finite-population correction
    (N - 1) / (N - n). That correction alone under-covers when much of the cell is labelled (the
    hypergeometric count is coarse for its small variance: 0.88-0.92 at half the cell, by exact
    enumeration), so the bounds are taken at mean -/+ f / (2n), a continuity correction scaled by
    the sampling fraction f = (n - 1) / (N - 1): nothing for a small fraction, where Wilson is right,
    the classical 1 / (2n) for a cell labelled almost in full."""
    count = len(values)
    n_fpc = n_eff * (size - 1) / (size - count)
    shift = (count - 1) / (size - 1) / (2 * count)
    low = wilson_bounds(max(mean - shift, 0.0), n_fpc, z)[0] if mean > 0 else 0.0
    high = wilson_bounds(min(mean + shift, 1.0), n_fpc, z)[1] if mean < 1 else 1.0
    modified_low, modified_high = _modified_wilson(mean, n_fpc, sum(values), count, z)
    return min(low, modified_low), max(high, modified_high)


def clustered_size(
    values: Sequence[float], weights: Sequence[float], clusters: Sequence[str], mean: float, n_eff: float
) -> float:
    """The effective sample size of labels drawn in clusters: p (1 - p) / V, with V the linearised
    (sandwich) variance of the weighted mean over cluster totals, n_c / (n_c - 1) *
    sum_c (sum_{i in c} w_i (y_i - p))^2 / (sum w)^2; kept between Kish's size over the clusters (a
    design effect no larger than the cluster size: replies of one conversation at worst say the same
    thing) and Kish's size over the labels (no larger than if they were drawn one by one). When V
    cannot be estimated (all labels alike, or one cluster), the cluster size: the cautious end."""
    totals: dict[str, float] = {}
    residuals: dict[str, float] = {}
    for value, weight, cluster in zip(values, weights, clusters, strict=True):
        totals[cluster] = totals.get(cluster, 0.0) + weight
        residuals[cluster] = residuals.get(cluster, 0.0) + weight * (value - mean)
    by_cluster = sum(totals.values()) ** 2 / sum(t * t for t in totals.values())
    count = len(totals)
    variance = count / (count - 1) * sum(r * r for r in residuals.values()) / sum(weights) ** 2 if count > 1 else 0.0
    if variance <= 0 or not 0 < mean < 1:
        return by_cluster
    return min(max(mean * (1 - mean) / variance, by_cluster), n_eff)


def cell_interval(
    values: Sequence[float],
    weights: Sequence[float],
    size: int,
    z: float,
    clusters: Sequence[str] | None = None,
) -> tuple[float, float, float] | None:
    """(mean, low, high) of one judge cell of `size` units from its labelled values (weights: 1 /
    inclusion probability; clusters: the labels' cluster ids, when drawn in clusters). None when none
    is labelled; a cell labelled in full is known exactly."""
    if not values:
        return None
    count = len(values)
    mean, n_eff = weighted_mean(values, weights)
    if count >= size:
        return mean, mean, mean
    if clusters is not None and len(set(clusters)) < count:
        n_eff = clustered_size(values, weights, clusters, mean, n_eff)
        low, high = clopper_pearson_bounds(mean * n_eff, n_eff, z)
    elif count < SMALL_CELL and max(weights) - min(weights) <= 1e-9 * max(weights):
        low, high = hypergeometric_bounds(round(sum(values)), count, size, z)
    elif count < SMALL_CELL:
        low, high = clopper_pearson_bounds(mean * n_eff, n_eff, z)
    else:
        low, high = _wilson_cell(values, mean, n_eff, size, z)
    return mean, min(low, mean), max(high, mean)
