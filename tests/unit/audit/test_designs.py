"""Audit designs: inclusion probabilities, determinism, the default allocation rule."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections import Counter

import pytest

from pytest_guardbench.errors import InternalError
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_guardbench.audit.designs import (
    MIN_PER_STRATUM,
    default_allocation,
    draw_random,
    draw_stratified,
    stratum_of,
)

IDS = [f"case-{i:03d}" for i in range(50)]


def test_stratum_names():
    assert stratum_of(True, True) == "harmful:handled"
    assert stratum_of(True, False) == "harmful:mishandled"
    assert stratum_of(False, None) == "safe:no_verdict"


def test_draw_random_is_uniform_without_replacement_with_n_over_N():
    drawn = draw_random(IDS, 10, seed=1)
    assert len(drawn) == 10
    assert len({d.unit_id for d in drawn}) == 10
    assert {d.unit_id for d in drawn} <= set(IDS)
    assert {d.inclusion_probability for d in drawn} == {10 / 50}
    assert {d.stratum for d in drawn} == {"random"}


def test_draw_random_takes_everything_when_n_exceeds_the_run():
    drawn = draw_random(IDS[:5], 9, seed=1)
    assert sorted(d.unit_id for d in drawn) == IDS[:5]
    assert {d.inclusion_probability for d in drawn} == {1.0}
    assert draw_random(IDS, 0, seed=1) == []
    assert draw_random([], 3, seed=1) == []


def test_draw_random_rejects_duplicates_and_negative_sizes():
    with pytest.raises(InternalError, match="occurs twice"):
        draw_random(["a", "b", "a"], 2, seed=0)
    with pytest.raises(ValueError, match=">= 0"):
        draw_random(IDS, -1, seed=0)


def test_same_seed_same_sample_whatever_the_input_order():
    shuffled = list(IDS)
    random.Random(7).shuffle(shuffled)
    assert draw_random(IDS, 12, seed=3) == draw_random(shuffled, 12, seed=3)
    assert draw_random(IDS, 12, seed=3) != draw_random(IDS, 12, seed=4)
    units = [(unit_id, "harmful:handled" if i % 3 else "safe:mishandled") for i, unit_id in enumerate(IDS)]
    assert draw_stratified(units, 12, seed=3) == draw_stratified(list(reversed(units)), 12, seed=3)


def test_the_sample_does_not_depend_on_the_hash_seed():
    # Sets and hash() would make the draw differ between machines; two interpreters with different
    # PYTHONHASHSEED must draw the same cases.
    code = (
        "import json; from pytest_guardbench.audit.designs import draw_random, draw_stratified\n"
        "ids = [f'c{i}' for i in range(40)]\n"
        "units = [(c, 'harmful:handled' if i % 4 else 'safe:no_verdict') for i, c in enumerate(ids)]\n"
        "print(json.dumps([[d.unit_id for d in draw_random(ids, 9, 5)],"
        " [d.model_dump() for d in draw_stratified(units, 9, 5)]]))"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for hash_seed in ("1", "2")
    }
    assert len(outputs) == 1
    assert len(json.loads(outputs.pop())[0]) == 9


def test_draw_random_inclusion_frequencies_match_n_over_N():
    hits: Counter[str] = Counter()
    draws = 2000
    for seed in range(draws):
        hits.update(d.unit_id for d in draw_random(IDS[:20], 5, seed))
    # Each unit is drawn with probability 1/4: 500 of 2000, sd ~19.4; 5 sd either side.
    assert all(400 < hits[unit_id] < 600 for unit_id in IDS[:20])


def test_draw_stratified_gives_each_unit_its_stratum_rate():
    units = [(f"h{i:02d}", "harmful:handled") for i in range(40)] + [
        (f"m{i:02d}", "harmful:mishandled") for i in range(8)
    ]
    drawn = draw_stratified(units, {"harmful:handled": 10, "harmful:mishandled": 4}, seed=2)
    by_stratum = Counter(d.stratum for d in drawn)
    assert by_stratum == {"harmful:handled": 10, "harmful:mishandled": 4}
    for d in drawn:
        assert d.unit_id.startswith("h" if d.stratum == "harmful:handled" else "m")
        assert d.inclusion_probability == (10 / 40 if d.stratum == "harmful:handled" else 4 / 8)
    # Shuffled as a whole, so a labeller cannot read the stratum from the order.
    assert [d.stratum for d in drawn] != sorted(d.stratum for d in drawn)


def test_draw_stratified_rejects_impossible_allocations():
    units = [("a", "safe:handled"), ("b", "safe:handled")]
    with pytest.raises(ValueError, match="no units"):
        draw_stratified(units, {"harmful:handled": 1}, seed=0)
    with pytest.raises(ValueError, match="cannot draw 3"):
        draw_stratified(units, {"safe:handled": 3}, seed=0)
    with pytest.raises(InternalError, match="occurs twice"):
        draw_stratified([("a", "safe:handled"), ("a", "safe:mishandled")], 1, seed=0)


def test_default_allocation_oversamples_where_the_judge_is_likely_wrong():
    sizes = {"harmful:handled": 200, "harmful:mishandled": 30, "safe:handled": 100, "safe:mishandled": 20}
    allocation = default_allocation(sizes, 60)
    assert sum(allocation.values()) == 60
    assert all(n >= MIN_PER_STRATUM for n in allocation.values())
    rate = {name: allocation[name] / sizes[name] for name in sizes}
    # The judge's minority verdict ("mishandled", prior error 0.3 against 0.1) is drawn at a higher rate.
    assert rate["harmful:mishandled"] > rate["harmful:handled"]
    assert rate["safe:mishandled"] > rate["safe:handled"]
    # The safe domain is half the harmful one but gets a fair share, not a proportional one.
    safe = allocation["safe:handled"] + allocation["safe:mishandled"]
    assert safe / 60 > 120 / 350


def test_default_allocation_hand_example():
    # Equal priors and equal domain shares: the greedy rule is proportional within a domain.
    allocation = default_allocation(
        {"harmful:handled": 60, "harmful:mishandled": 60, "safe:handled": 30, "safe:mishandled": 30},
        20,
        prior_error={"handled": 0.2, "mishandled": 0.2},
    )
    assert allocation == {"harmful:handled": 5, "harmful:mishandled": 5, "safe:handled": 5, "safe:mishandled": 5}


def test_default_allocation_edges():
    assert default_allocation({"a:handled": 3, "b:handled": 0}, 10) == {"a:handled": 3}
    assert default_allocation({"harmful:handled": 50, "harmful:no_verdict": 1}, 10)["harmful:no_verdict"] == 1
    # Too few labels for every stratum's minimum: the strata take turns, largest N_h * S_h first.
    sizes = {"harmful:handled": 100, "harmful:mishandled": 5, "safe:handled": 50}
    assert default_allocation(sizes, 2) == {"harmful:handled": 1, "harmful:mishandled": 0, "safe:handled": 1}
    assert default_allocation(sizes, 4) == {"harmful:handled": 2, "harmful:mishandled": 1, "safe:handled": 1}
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        default_allocation({"harmful:handled": 5}, 3, prior_error={"handled": 1.5})


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.dictionaries(
        st.sampled_from([stratum_of(h, v) for h in (True, False) for v in (True, False, None)]),
        st.integers(min_value=0, max_value=60),
    ),
    n=st.integers(min_value=0, max_value=150),
)
def test_default_allocation_properties(sizes, n):
    allocation = default_allocation(sizes, n)
    non_empty = {name: size for name, size in sizes.items() if size > 0}
    assert set(allocation) == set(non_empty)
    assert sum(allocation.values()) == min(n, sum(non_empty.values()))
    assert all(0 <= allocation[name] <= size for name, size in non_empty.items())
    if n >= sum(min(MIN_PER_STRATUM, size) for size in non_empty.values()):
        assert all(allocation[name] >= min(MIN_PER_STRATUM, size) for name, size in non_empty.items())


@settings(max_examples=100, deadline=None)
@given(
    strata=st.lists(st.sampled_from(["harmful:handled", "harmful:mishandled", "safe:handled"]), max_size=40),
    n=st.integers(min_value=0, max_value=50),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_draw_stratified_properties(strata, n, seed):
    units = [(f"u{i:03d}", stratum) for i, stratum in enumerate(strata)]
    drawn = draw_stratified(units, n, seed)
    assert len({d.unit_id for d in drawn}) == len(drawn) == min(n, len(units))
    sizes = Counter(strata)
    taken = Counter(d.stratum for d in drawn)
    for d in drawn:
        assert dict(units)[d.unit_id] == d.stratum
        assert d.inclusion_probability == taken[d.stratum] / sizes[d.stratum]
    assert drawn == draw_stratified(units, n, seed)


@settings(max_examples=100, deadline=None)
@given(
    size=st.integers(min_value=0, max_value=80), n=st.integers(min_value=0, max_value=100), seed=st.integers(0, 10**9)
)
def test_draw_random_properties(size, n, seed):
    ids = [f"u{i}" for i in range(size)]
    drawn = draw_random(ids, n, seed)
    assert len({d.unit_id for d in drawn}) == len(drawn) == min(n, size)
    assert all(d.inclusion_probability == min(n, size) / size for d in drawn)
