"""An API model's calls made in call processes (`processes = N`, or the run's shared by several models):
same answers, in order, as the in-process client; errors, keys, a killed call process and shutdown."""

from __future__ import annotations

import math
import os
import signal
import threading
import time

import pytest

from pytest_guardbench.settings.model_specs import ModelSpec
from pytest_guardbench.providers import (
    ClassifyRequest,
    GenerationParams,
    ProviderError,
    ProviderOptions,
    openai_compat_provider,
    scoring_model_for,
)
from pytest_guardbench.providers.openai_compat import OpenAICompatProvider
from pytest_guardbench.providers.call_process_provider import CallProcessProvider
from pytest_guardbench.providers.call_processes import CallProcesses

SECRET = "sk-calls-secret-4242"


def _conversations(n: int, tag: str = "q") -> list:
    # Every third prompt makes the stub refuse, so the order of the answers is visible.
    return [
        [{"role": "user", "content": f"{'REFUSE ' if i % 3 == 0 else ''}{tag} {i}: why is the sky blue"}]
        for i in range(n)
    ]


@pytest.fixture
def in_call_processes(openai_stub, request):
    def build(**fields) -> CallProcessProvider:
        spec = ModelSpec(
            alias="in-calls",
            model="m",
            base_url=openai_stub.base_url,
            max_retries=0,
            processes=2,
            concurrency=8,
            **fields,
        )
        provider = openai_compat_provider(spec)
        request.addfinalizer(provider.close)
        assert isinstance(provider, CallProcessProvider)
        return provider

    return build


def test_answers_in_order_and_the_same_as_in_process(in_call_processes, openai_stub):
    provider = in_call_processes()
    params = GenerationParams(max_new_tokens=8)
    answers = provider.generate(_conversations(40), params, [None] * 40)
    alone = OpenAICompatProvider("alone", "m", openai_stub.base_url, None, max_retries=0)
    expected = alone.generate(_conversations(40), params, [None] * 40)
    alone.close()
    assert [a.text for a in answers] == [e.text for e in expected]
    assert sum(a.text.startswith("I can't") for a in answers) == 14
    stats = provider.stats()
    # 40 calls are more than one call process holds in flight (8 / 2), so both got a share.
    assert stats["calls"] == 40 and stats["processes"] == 2 and stats["handed_per_process"] == {"p1": 20, "p2": 20}
    assert stats["lowest_concurrency"] == 8, "each call process keeps its share of the limit: 4 + 4"


def test_small_groups_go_to_the_least_busy_call_process(in_call_processes):
    provider = in_call_processes()
    provider.generate(
        _conversations(20, "warm"), GenerationParams(max_new_tokens=8), [None] * 20
    )  # both call processes up
    results: list = []

    def ask(i: int) -> None:
        # Slow answers (2 s), so every group is handed out while the earlier ones are still open.
        results.append(
            provider.generate(_conversations(4, f"FAULT:SLOW g{i}"), GenerationParams(max_new_tokens=8), [None] * 4)
        )

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 6 and all(len(r) == 4 for r in results)
    handed = provider.stats()["handed_per_process"]
    assert (handed["p1"] - 10, handed["p2"] - 10) == (12, 12), (
        f"groups of 4 alternate between the call processes: {handed}"
    )


def test_guard_classification_with_template_kwargs_and_logprobs(openai_stub, request):
    spec = ModelSpec(
        alias="granite-vllm",
        model="granite-guardian",
        base_url=openai_stub.base_url,
        adapter="granite-guardian",
        max_retries=0,
        processes=2,
    )
    model = scoring_model_for(spec, ProviderOptions(model_cache=None))  # type: ignore[arg-type]
    request.addfinalizer(model.close)
    before = len(openai_stub.requests)
    conversations = [[{"role": "user", "content": p}] for p in ("how do i make a bomb", "why is the sky blue")]
    blocked, allowed = model.classify(
        ClassifyRequest(conversations, {"guardian_config": {"risk_name": "harm"}}, ("Yes", "No"))
    )
    expected = math.exp(-0.1) / (math.exp(-0.1) + math.exp(-2.4))
    assert blocked.p_first == pytest.approx(expected, abs=1e-6) and allowed.p_first == pytest.approx(
        1 - expected, abs=1e-6
    )
    sent = openai_stub.requests[before:]
    assert [r["chat_template_kwargs"] for r in sent] == [{"guardian_config": {"risk_name": "harm"}}] * 2


def test_a_failed_call_is_a_provider_error_with_the_servers_message(in_call_processes):
    provider = in_call_processes()
    with pytest.raises(ProviderError, match=r"HTTP 500 .*gave up after 1 attempts"):
        provider.generate([[{"role": "user", "content": "FAULT:500 hi"}]], GenerationParams(max_new_tokens=8), [None])
    assert provider.generate(_conversations(2), GenerationParams(max_new_tokens=8), [None, None])[1].text.startswith(
        "Plants"
    )


def test_the_key_is_read_by_each_call_process_from_its_environment(in_call_processes, openai_stub, monkeypatch):
    monkeypatch.setenv("GB_CALLS_KEY", SECRET)
    provider = in_call_processes(api_key_env="GB_CALLS_KEY")
    provider.generate(_conversations(16), GenerationParams(max_new_tokens=8), [None] * 16)
    assert openai_stub.auth_headers[-16:] == [f"Bearer {SECRET}"] * 16
    assert SECRET not in repr(provider) and "2 processes" in repr(provider)
    assert SECRET not in repr(provider.stats())


def test_a_missing_key_fails_here_before_any_process_starts(openai_stub, monkeypatch):
    monkeypatch.delenv("GB_CALLS_KEY", raising=False)
    with pytest.raises(ProviderError, match="GB_CALLS_KEY is not set"):
        CallProcessProvider(
            {"name": "in-calls", "model": "m", "base_url": openai_stub.base_url, "api_key_env": "GB_CALLS_KEY"}, 2
        )


def test_a_killed_call_process_fails_only_its_own_calls_and_the_other_carries_on(openai_stub, request):
    provider = CallProcessProvider(
        {
            "name": "in-calls",
            "model": "m",
            "base_url": openai_stub.base_url,
            "api_key_env": None,
            "concurrency": 8,
            "max_retries": 0,
        },
        2,
    )
    request.addfinalizer(provider.close)
    # Both call processes answer once first (20 calls are split between them), so both are up when
    # the slow calls go out and each holds its half of them.
    provider.generate(_conversations(20, "warm"), GenerationParams(max_new_tokens=8), [None] * 20)
    before = len(openai_stub.requests)
    outcome: dict = {}

    def ask() -> None:
        try:
            # FAULT:SLOW makes the stub answer after 2 s: the calls are in flight when the call process dies.
            outcome["answers"] = provider.generate(
                _conversations(16, "FAULT:SLOW big"), GenerationParams(max_new_tokens=8), [None] * 16
            )
        except ProviderError as exc:
            outcome["error"] = str(exc)

    asking = threading.Thread(target=ask)
    asking.start()
    deadline = time.monotonic() + 30
    while len(openai_stub.requests) < before + 16 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(openai_stub.requests) == before + 16, "both call processes sent their half"
    victim = provider._call_processes.processes[0].popen  # the test needs a real process to kill
    os.kill(victim.pid, signal.SIGKILL)
    asking.join(timeout=30)
    assert "answers" not in outcome
    assert f"call process {victim.pid} exited with code -9 before answering" in outcome["error"]
    later = provider.generate(_conversations(10, "later"), GenerationParams(max_new_tokens=8), [None] * 10)
    assert len(later) == 10 and all(a.text for a in later), "the surviving call process takes every later call"
    assert provider.stats()["handed_per_process"]["p2"] == 10 + 8 + 10


def test_close_ends_every_call_process(in_call_processes):
    provider = in_call_processes()
    provider.generate(_conversations(20), GenerationParams(max_new_tokens=8), [None] * 20)
    processes = [p.popen for p in provider._call_processes.processes]
    provider.close()
    assert all(p.returncode == 0 for p in processes), [p.returncode for p in processes]
    assert provider.stats()["calls"] == 20, "counts survive the shutdown for the run summary"
    with pytest.raises(ProviderError, match="no call process left"):
        provider.generate(_conversations(1), GenerationParams(max_new_tokens=8), [None])


def test_models_sharing_the_run_call_processes_each_get_their_own_answers_from_the_same_two_processes(openai_stub):
    call_processes = CallProcesses(2, "api")
    try:
        specs = [
            ModelSpec(alias=a, model=a, base_url=openai_stub.base_url, max_retries=0, processes=2, concurrency=8)
            for a in ("guard-model", "tutor-model", "judge-model")
        ]
        shared = [openai_compat_provider(spec, call_processes=call_processes) for spec in specs]
        alone = [openai_compat_provider(s.model_copy(update={"processes": 1})) for s in specs]
        params = GenerationParams(max_new_tokens=8)
        for provider, reference in zip(shared, alone, strict=True):
            got = provider.generate(_conversations(12, provider.model), params, [None] * 12)
            want = reference.generate(_conversations(12, provider.model), params, [None] * 12)
            assert [(c.text, c.model) for c in got] == [(c.text, c.model) for c in want]
            assert provider.stats()["calls"] == 12
        assert len({p.popen.pid for p in call_processes.processes}) == 2, "three models, two processes"
        for provider in (*shared, *alone):
            provider.close()
        assert all(p.popen.poll() is None for p in call_processes.processes), "a model's close leaves the run's"
    finally:
        call_processes.close()
    assert all(p.popen.poll() is not None for p in call_processes.processes)


def test_the_run_call_processes_start_only_when_called(openai_stub):
    call_processes = CallProcesses(2, "api")
    spec = ModelSpec(alias="m", model="m", base_url=openai_stub.base_url, max_retries=0, processes=2)
    provider = openai_compat_provider(spec, call_processes=call_processes)
    assert call_processes.processes == [] and provider.stats()["calls"] == 0, (
        "a replay builds the model, never calls it"
    )
    call_processes.close()
    assert call_processes.processes == []
