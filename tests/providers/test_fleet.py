"""A role served by several OpenAI-compatible replicas: load spread, failover, a failing replica
taken out and tried again after its cool-down."""

from __future__ import annotations

import socket

import pytest

from pytest_guardbench.settings.model_specs import ModelSpec, parse_model_spec
from pytest_guardbench.providers import GenerationParams, openai_compat_provider
from tests.openai_stub import OpenAIStub


@pytest.fixture
def replicas():
    stubs = [OpenAIStub(latency_s=0.02), OpenAIStub(latency_s=0.02)]
    yield stubs
    for stub in stubs:
        stub.close()


def _dead_url() -> str:
    with socket.socket() as probe:  # a port that was free a moment ago: connections are refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


class ManualClock:
    """The fleet's time, moved only by the test: a cool-down ends when the test says so, however slow
    the machine."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def _ask(provider, n: int, tag: str = "q"):
    conversations = [[{"role": "user", "content": f"{tag} {i}: why is the sky blue"}] for i in range(n)]
    return provider.generate(conversations, GenerationParams(max_new_tokens=8), [None] * n)


def test_calls_spread_over_healthy_replicas(replicas):
    spec = ModelSpec(alias="fleet", model="m", fleet=tuple(s.base_url for s in replicas), concurrency=4, max_retries=0)
    provider = openai_compat_provider(spec)
    answers = _ask(provider, 80)
    assert all(a.text.startswith("Plants") for a in answers)
    served = [len(s.requests) for s in replicas]
    assert sum(served) == 80 and min(served) >= 24, f"least-loaded choice spreads the calls: {served}"
    assert provider.concurrency == 8, "the per-replica limit applies to each replica"
    provider.close()


def test_a_dead_replica_is_taken_out_then_tried_again(replicas):
    dead = _dead_url()
    spec = ModelSpec(
        alias="fleet",
        model="m",
        fleet=(dead, replicas[0].base_url),
        concurrency=2,
        max_retries=2,
        failures_to_drop=2,
        cooldown_s=30,
        retry_backoff_s=0.01,
    )
    provider = openai_compat_provider(spec)
    clock = ManualClock()
    provider.fleet.clock = clock
    answers = _ask(provider, 40)
    assert all(a.text.startswith("Plants") for a in answers), "every call failed over to the live replica"
    stats = provider.stats()["endpoints"]
    assert stats[dead]["taken_out"] == 1 and stats[dead]["failures"] == stats[dead]["calls"] >= 2
    calls_before = stats[dead]["calls"]
    assert calls_before <= 4, "once out, the dead replica gets no calls during its cool-down"
    clock.advance(29)
    _ask(provider, 10, tag="still out")
    assert provider.stats()["endpoints"][dead]["calls"] == calls_before, "a second before the cool-down ends"
    clock.advance(1)
    _ask(provider, 10, tag="later")
    later = provider.stats()["endpoints"][dead]
    assert later["calls"] > calls_before and later["taken_out"] == 2, (
        "after the cool-down it is tried, fails once, and goes out again"
    )
    provider.close()


def test_fleet_spec_string_and_cache_identity(replicas):
    a, b = (s.base_url for s in replicas)
    spec = parse_model_spec(f"vllm:granite@{a},{b}", {})
    assert spec.fleet == (a, b) and spec.base_url == a
    one = openai_compat_provider(spec)
    other_order = openai_compat_provider(parse_model_spec(f"vllm:granite@{b},{a}", {}))
    assert one.cache_identity == other_order.cache_identity, "the same replicas in another order are the same model"
    assert "fleet=" in repr(one)
    one.close()
    other_order.close()
