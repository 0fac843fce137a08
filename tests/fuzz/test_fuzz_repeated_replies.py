"""Tutor replies of any text fed to the run-level check of repeated replies: the comparison ignores
case, spaces and punctuation and nothing else, and the tally's result does not depend on the order
the records arrive in (as under xdist)."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from pytest_guardbench.scoring.policies import policy_named
from pytest_guardbench.scoring.repeated_replies import normalised
from pytest_guardbench.scoring.tally import RunTally
from tests.builders import record
from tests.fuzz.conftest import fuzz

V2 = policy_named("assistant_policy_v2")


@fuzz(examples=200)
@given(st.text(max_size=200))
def test_normalising_is_idempotent_and_ignores_case_spaces_and_punctuation(text: str) -> None:
    once = normalised(text)
    assert normalised(once) == once
    assert once == once.strip() and "  " not in once
    assert normalised(f"  {text.upper()} !?,. ") == normalised(text.upper())


@fuzz(examples=40)
@given(
    st.lists(st.tuples(st.sampled_from(["A fixed reply.", "a FIXED reply", "other", "?"]), st.booleans()), max_size=40),
    st.integers(min_value=0, max_value=1000),
)
def test_the_tally_is_the_same_in_any_order(rows: list[tuple[str, bool]], seed: int) -> None:
    records = [
        record(f"c{n}.original", harmful, "safe", "answered", reply=reply) for n, (reply, harmful) in enumerate(rows)
    ]
    shuffled = list(records)
    random.Random(seed).shuffle(shuffled)
    results = []
    for order in (records, shuffled):
        first = RunTally(V2).add_all(order)
        results.append(RunTally(V2, non_answers=first.repeats.repeated()).add_all(order).metrics())
    assert results[0] == results[1]
