"""How a run's API concurrency is shared by xdist workers, which runs count as calling only APIs, and
when the run's call processes start by themselves."""

from __future__ import annotations

from hypothesis import given, strategies as st

from pytest_guardbench.cases.sources import LoadedData
from pytest_guardbench.run.inputs import RunInputs
from pytest_guardbench.run.stack import (
    AUTO_API_PROCESSES,
    AUTO_MIN_CALLS,
    run_api_processes,
    run_role_spec,
    shared_concurrency,
    shares_call_processes,
    will_use_call_processes,
)
from pytest_guardbench.settings.config import Settings
from pytest_guardbench.settings.model_specs import ModelSpec
from tests.builders import case


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


def _inputs(cases: int, roles: dict[str, ModelSpec], **settings: object) -> RunInputs:
    return RunInputs(
        Settings(**settings),  # type: ignore[arg-type]
        LoadedData(items=(), sources=()),
        [case(f"p.q{i}.original", i % 2 == 0) for i in range(cases)],
        "sys",
        "no",
        "tutor",
        model_specs=roles,
    )


API = ModelSpec(alias="a", model="m", base_url="http://x/v1")
THREE_APIS = {"guardrail": API, "tutor": API, "judge": API}


def test_call_processes_start_by_themselves_for_a_long_run_of_api_models_in_one_process():
    enough = AUTO_MIN_CALLS // 3
    assert run_api_processes(_inputs(enough, THREE_APIS), distributed=False) == AUTO_API_PROCESSES
    assert run_api_processes(_inputs(enough - 1, THREE_APIS), distributed=False) == 1, "too few calls to pay"
    assert will_use_call_processes(_inputs(enough, THREE_APIS), distributed=False) == AUTO_API_PROCESSES


def test_no_call_processes_by_themselves_under_xdist_in_a_replay_or_beside_a_local_model():
    many = AUTO_MIN_CALLS
    assert run_api_processes(_inputs(many, THREE_APIS), distributed=True) == 1
    assert run_api_processes(_inputs(many, THREE_APIS, cache="replay"), distributed=False) == 1
    local = ModelSpec(alias="g", model="ibm-granite/granite-guardian-3.3-8b", provider="hf-local")
    assert run_api_processes(_inputs(many, {**THREE_APIS, "guardrail": local}), distributed=False) == 1
    assert run_api_processes(_inputs(many, {"judge": API}), distributed=False) == 1, "a tutor that is not an API"
    assert run_api_processes(_inputs(many, THREE_APIS, batch_api=("judge",)), distributed=False) == 1


def test_the_option_wins_and_an_alias_s_own_processes_keep_their_own():
    assert run_api_processes(_inputs(1, THREE_APIS, api_processes=3), distributed=True) == 3
    assert run_api_processes(_inputs(AUTO_MIN_CALLS, THREE_APIS, api_processes=1), distributed=False) == 1
    own = API.model_copy(update={"processes": 4})
    inputs = _inputs(AUTO_MIN_CALLS, {**THREE_APIS, "tutor": own})
    assert run_role_spec(inputs, "tutor", AUTO_API_PROCESSES).processes == 4
    assert not shares_call_processes(inputs, "tutor", AUTO_API_PROCESSES)
    assert shares_call_processes(inputs, "judge", AUTO_API_PROCESSES)
    assert run_role_spec(inputs, "judge", 1).processes == 1
