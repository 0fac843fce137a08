"""One verdict cell's interval: which of its three regimes a cell gets, and the cluster-adjusted
effective sample size."""

from __future__ import annotations

import pytest

from pytest_guardbench.audit.cells import SMALL_CELL, cell_interval, clustered_size, weighted_mean
from pytest_guardbench.scoring.exact_intervals import clopper_pearson_bounds, hypergeometric_bounds
from pytest_guardbench.scoring.intervals import Z_95


def test_a_cell_with_no_label_is_unknown_and_one_labelled_in_full_is_known():
    assert cell_interval([], [], 10, Z_95) is None
    assert cell_interval([1.0, 0.0], [1.0, 1.0], 2, Z_95) == (0.5, 0.5, 0.5)


def test_few_labels_of_equal_weight_get_the_exact_hypergeometric_interval():
    values = [1.0, 1.0, 0.0]
    mean, low, high = cell_interval(values, [4.0] * 3, 40, Z_95) or (0, 0, 0)
    assert mean == pytest.approx(2 / 3)
    assert (low, high) == hypergeometric_bounds(2, 3, 40)


def test_few_labels_of_unequal_weight_get_clopper_pearson_on_the_effective_size():
    values, weights = [1.0, 1.0, 0.0, 1.0], [1.0, 2.0, 2.0, 4.0]
    mean, n_eff = weighted_mean(values, weights)
    found = cell_interval(values, weights, 100, Z_95)
    assert found is not None
    assert found == pytest.approx((mean, *clopper_pearson_bounds(mean * n_eff, n_eff)))


def test_from_small_cell_labels_on_the_wilson_interval_is_used():
    values = [1.0] * (SMALL_CELL - 1) + [0.0]
    found = cell_interval(values, [1.0] * SMALL_CELL, 1000, Z_95)
    exact = hypergeometric_bounds(SMALL_CELL - 1, SMALL_CELL, 1000)
    assert found is not None and found[1] > exact[0]  # narrower than the exact one


def test_clustered_replies_that_say_the_same_thing_count_as_one_each():
    # 10 conversations of 3 replies, every reply of a conversation alike: 10 labels' worth, not 30.
    values = [float(c < 4) for c in range(10) for _ in range(3)]
    clusters = [f"c{c}" for c in range(10) for _ in range(3)]
    weights = [1.0] * 30
    mean, n_eff = weighted_mean(values, weights)
    assert clustered_size(values, weights, clusters, mean, n_eff) == pytest.approx(10.0)
    found = cell_interval(values, weights, 300, Z_95, clusters)
    assert found == pytest.approx((0.4, *clopper_pearson_bounds(4.0, 10.0)))


def test_clustered_replies_that_vary_within_conversations_count_up_to_every_label():
    # Within each conversation one reply of three is 1: clusters alike, replies not: as many as drawn.
    values = [float(r == 0) for _ in range(10) for r in range(3)]
    clusters = [f"c{c}" for c in range(10) for _ in range(3)]
    weights = [1.0] * 30
    mean, n_eff = weighted_mean(values, weights)
    assert clustered_size(values, weights, clusters, mean, n_eff) == pytest.approx(30.0)
    # All alike, or one cluster: the cautious end, the number of clusters.
    assert clustered_size([1.0] * 6, [1.0] * 6, ["a", "a", "b", "b", "c", "c"], 1.0, 6.0) == pytest.approx(3.0)
    assert clustered_size([1.0, 0.0], [1.0, 1.0], ["a", "a"], 0.5, 2.0) == pytest.approx(1.0)
