"""How a run's API concurrency is shared by xdist workers, and which runs count as calling only APIs."""

from __future__ import annotations

from hypothesis import given, strategies as st

from pytest_guardbench.run.stack import shared_concurrency
from pytest_guardbench.settings.model_specs import ModelSpec


@given(concurrency=st.integers(1, 512), processes=st.integers(1, 64))
def test_workers_never_have_more_in_flight_together_than_the_run_allows(concurrency, processes):
    shared = shared_concurrency(
        ModelSpec(alias="a", model="m", base_url="http://x/v1", concurrency=concurrency), processes
    )
    assert shared.concurrency is not None and shared.concurrency >= 1
    assert shared.concurrency * processes <= max(concurrency, processes), "at least one each, never more than the run's"
    if processes == 1:
        assert shared.concurrency == concurrency


def test_a_local_model_and_an_unset_concurrency_are_left_as_they_are():
    local = ModelSpec(alias="g", model="ibm-granite/granite-guardian-3.3-8b", provider="hf-local", concurrency=8)
    assert shared_concurrency(local, 4) == local
    unset = ModelSpec(alias="a", model="m", base_url="http://x/v1")
    assert shared_concurrency(unset, 4) == unset
    assert (
        shared_concurrency(ModelSpec(alias="a", model="m", base_url="http://x/v1", concurrency=32), 2).concurrency == 16
    )
