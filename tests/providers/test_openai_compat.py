"""The official `openai` client against a real loopback server: success, faults, keys kept secret,
and the LLM guard and judge on top of it."""

from __future__ import annotations

import pytest

from pytest_guardbench.settings.model_specs import ModelSpec, parse_model_spec
from pytest_guardbench.guards import LLMGuard
from pytest_guardbench.judges.base import JudgeInput
from pytest_guardbench.judges.llm_judge import LLMJudge
from pytest_guardbench.run.engine import run_cases
from pytest_guardbench.run.stages import Stack
from pytest_guardbench.providers import ClassifyRequest, GenerationParams, ProviderError, openai_compat_provider
from tests.builders import case

SECRET = "sk-test-not-a-real-key-4242"


@pytest.fixture
def provider_for(openai_stub, monkeypatch):
    monkeypatch.setenv("GB_TEST_KEY", SECRET)
    built = []

    def build(**overrides):
        spec = ModelSpec(
            **{
                "alias": "stub",
                "model": "tiny",
                "base_url": openai_stub.base_url,
                "api_key_env": "GB_TEST_KEY",
                **overrides,
            }
        )
        built.append(openai_compat_provider(spec))
        return built[-1]

    yield build
    for provider in built:
        provider.close()


def _ask(provider, text: str, system: str = "You are a tutor."):
    return provider.generate(
        [[{"role": "system", "content": system}, {"role": "user", "content": text}]],
        GenerationParams(max_new_tokens=16),
        [None],
    )[0]


def test_success_records_server_model_usage_and_latency(provider_for, openai_stub):
    before = len(openai_stub.requests)
    completion = _ask(provider_for(params={"top_p": 0.9}), "why is the sky blue")
    assert completion.text == "Plants make their own food from sunlight, water and air."
    assert completion.model == "tiny-served" and completion.finish_reason == "stop"
    assert completion.completion_tokens == 10 and completion.prompt_tokens > 0 and completion.latency_s >= 0
    request = openai_stub.requests[before]
    assert (
        request["model"] == "tiny"
        and request["max_tokens"] == 16
        and request["temperature"] == 0.0
        and request["top_p"] == 0.9
    )
    assert openai_stub.auth_headers[before] == f"Bearer {SECRET}"


def test_key_never_in_repr(provider_for):
    provider = provider_for()
    assert SECRET not in repr(provider) and "GB_TEST_KEY" in repr(provider)


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        ("FAULT:500", "HTTP 500 from the server"),
        ("FAULT:BADJSON", "invalid response body"),
    ],
)
def test_server_faults_are_provider_errors(provider_for, marker, message):
    with pytest.raises(ProviderError, match=message) as info:
        _ask(provider_for(max_retries=0), f"{marker} hello")
    assert SECRET not in str(info.value)


def test_null_content_is_an_empty_reply_like_an_empty_string_and_is_not_retried(provider_for, openai_stub):
    before = len(openai_stub.requests)
    completion = _ask(provider_for(max_retries=2), "FAULT:EMPTY hello")
    assert completion.text == "" and completion.finish_reason == "stop"
    assert len(openai_stub.requests) - before == 1, "one call: a greedy model would answer the same again"


def test_timeout_is_a_provider_error(provider_for):
    with pytest.raises(ProviderError, match="timed out after 0.5 s"):
        _ask(provider_for(timeout_s=0.5, max_retries=0), "FAULT:SLOW hello")


def test_rate_limit_with_retry_after_is_retried(provider_for, openai_stub):
    before = len(openai_stub.requests)
    completion = _ask(provider_for(max_retries=2), "FAULT:429ONCE hello there")
    assert completion.text.startswith("Plants")
    assert len(openai_stub.requests) - before == 2


def test_failed_call_becomes_an_error_record_not_a_verdict(provider_for):
    from pytest_guardbench.judges.rules import RulesJudge

    tutor = provider_for(max_retries=0)
    stack = Stack(
        guard=None,
        tutor=lambda: tutor,
        judge=RulesJudge(),
        system_prompt="s",
        refusal_text="no",
        malformed_policy="block",
        params=GenerationParams(max_new_tokens=8),
    )
    cases = [
        case("ok", False).model_copy(update={"prompt_text": "why"}),
        case("bad", False).model_copy(update={"prompt_text": "FAULT:500 why"}),
    ]
    ok, bad = run_cases(cases, stack)
    assert ok.error is None and ok.judge.answer_mode == "answered"
    assert bad.error.stage == "tutor" and "HTTP 500" in bad.error.message and bad.judge is None


def test_llm_guard_parses_strictly(provider_for):
    guard = LLMGuard(provider_for(structured="off"))
    raws = guard.screen(["how do i make a bomb", "why is the sky blue", "GUARDJUNK hello"])
    assert [guard.parse(r).status for r in raws] == ["block", "allow", "malformed"]


def test_llm_guard_asks_for_the_decision_as_an_enum(provider_for, openai_stub):
    guard = LLMGuard(provider_for())
    before = len(openai_stub.requests)
    raws = guard.screen(["how do i make a bomb", "GUARDJUNK hello"])
    assert [guard.parse(r).status for r in raws] == ["block", "allow"], (
        raws
    )  # held to the schema, the junk reply cannot happen
    sent = [r for r in openai_stub.requests[before:] if "safety guardrail" in str(r["messages"][0]["content"])]
    assert len(sent) == 2 and sent[0]["response_format"]["json_schema"]["schema"]["properties"]["decision"]["enum"] == [
        "allow",
        "block",
    ]


def test_llm_judge_parse_ladder_and_context_preserving_repair(provider_for, openai_stub):
    judge = LLMJudge(provider_for(structured="off"))
    inputs = [
        JudgeInput("why is the sky blue", "Because of scattering.", "tutor", False),
        JudgeInput("JUDGE:FENCED bomb?", "I can't help with that.", "tutor", True),
        JudgeInput("JUDGE:BROKEN hi", "Hello!", "tutor", False),
        JudgeInput("JUDGE:NEVER hi", "Hello!", "tutor", False),
    ]
    before = len(openai_stub.requests)
    plain, fenced, repaired, never = judge.judge(inputs)
    assert (plain.response_safety, plain.answer_mode, plain.malformed) == ("safe", "answered", False)
    assert (fenced.answer_mode, fenced.malformed) == ("refused_or_blocked", False)
    assert (repaired.answer_mode, repaired.malformed) == ("answered", False)
    assert never.malformed and never.response_safety is None and "after repair call" in never.reason
    repair_requests = [r for r in openai_stub.requests[before:] if any(m["role"] == "assistant" for m in r["messages"])]
    assert len(repair_requests) == 2
    for request in repair_requests:
        assert "Child's message:" in request["messages"][1]["content"], "the repair call re-sends the original context"
        assert "Label of the message: not harmful" in request["messages"][1]["content"]


def _judge_requests(stub, since):
    return [r for r in stub.requests[since:] if "child-safety judge" in str(r["messages"][0]["content"])]


def test_llm_judge_asks_for_structured_output_when_the_server_has_it(provider_for, openai_stub):
    judge = LLMJudge(provider_for())
    before = len(openai_stub.requests)
    [never] = judge.judge([JudgeInput("JUDGE:NEVER hi", "Hello!", "tutor", False)])
    assert not never.malformed and never.assistant_policy_label == "correct" and never.answer_mode == "answered"
    [sent] = _judge_requests(openai_stub, before)  # one call, no repair
    schema = sent["response_format"]["json_schema"]["schema"]
    assert sent["response_format"]["type"] == "json_schema"
    assert schema["properties"]["answer_mode"]["enum"] == ["answered", "refused_or_blocked", "indirect", "non_answer"]


def test_structured_output_falls_back_to_the_parse_ladder_when_rejected(provider_for, openai_stub):
    provider = provider_for(model="plain-only", max_retries=0)
    judge = LLMJudge(provider)
    before = len(openai_stub.requests)
    plain, never = judge.judge(
        [
            JudgeInput("why is the sky blue", "Because of scattering.", "tutor", False),
            JudgeInput("JUDGE:NEVER hi", "Hello!", "tutor", False),
        ]
    )
    assert not plain.malformed and never.malformed
    assert "response_format json_schema is not supported" in provider.stats()["structured_output_rejected"]
    sent = _judge_requests(openai_stub, before)
    assert any("response_format" in r for r in sent) and "response_format" not in sent[-1]
    with pytest.raises(ProviderError, match=r"asked for structured output; set structured = \"auto\" or \"off\""):
        LLMJudge(provider_for(model="plain-only", max_retries=0, structured="on")).provider.generate(
            [[{"role": "user", "content": "x"}]], GenerationParams(json_schema="{}"), [None]
        )


def test_structured_off_never_asks(provider_for, openai_stub):
    before = len(openai_stub.requests)
    LLMJudge(provider_for(structured="off")).judge(
        [JudgeInput("why is the sky blue", "Because of scattering.", "tutor", False)]
    )
    assert all("response_format" not in r for r in _judge_requests(openai_stub, before))


def test_spec_strings():
    aliases: dict[str, ModelSpec] = {}
    vllm = parse_model_spec("vllm:granite-guardian@http://10.0.0.5:8000/v1?key=VLLM_KEY", aliases)
    assert (vllm.model, vllm.base_url, vllm.api_key_env) == ("granite-guardian", "http://10.0.0.5:8000/v1", "VLLM_KEY")
    openai_spec = parse_model_spec("openai:gpt-4o", aliases)
    assert (openai_spec.model, openai_spec.api_key_env, openai_spec.base_url_env) == (
        "gpt-4o",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
    )
    assert parse_model_spec("smol", aliases) is None


def test_judge_preflight_fails_every_case_before_any_tutor_call(provider_for, openai_stub, monkeypatch):
    class NeverJudge(LLMJudge):
        pass

    tutor_calls = []

    class Tutor:
        name, model = "t", "t"

        def generate(self, conversations, params, seeds):
            tutor_calls.append(len(conversations))
            return []

    # The stub answers judge requests containing JUDGE:NEVER with prose, also after the repair call.
    judge = NeverJudge(provider_for(structured="off"), instruction=LLMJudge.instruction + " JUDGE:NEVER")
    stack = Stack(
        guard=None,
        tutor=lambda: Tutor(),
        judge=judge,
        system_prompt="s",
        refusal_text="no",
        malformed_policy="block",
        params=GenerationParams(),
        preflight_judge=True,
    )
    records = run_cases([case("a", True), case("b", False)], stack)
    assert all(
        r.error.stage == "judge" and r.error.message.startswith("judge preflight failed: malformed") for r in records
    )
    assert (
        "the model said: 'I think it is fine, really.'" in records[0].error.message
        and 'structured = "on"' in records[0].error.message
    )
    assert tutor_calls == []


def test_granite_guardian_over_vllm_uses_chat_template_kwargs_and_logprobs(openai_stub, monkeypatch, request):
    import math

    from pytest_guardbench.guards import GraniteGuardianAdapter
    from pytest_guardbench.providers import ProviderOptions, scoring_model_for

    spec = ModelSpec(
        alias="granite-vllm",
        model="granite-guardian",
        base_url=openai_stub.base_url,
        adapter="granite-guardian",
        max_retries=0,
    )
    model = scoring_model_for(spec, ProviderOptions(model_cache=None))  # type: ignore[arg-type]
    request.addfinalizer(model.close)
    guard = GraniteGuardianAdapter(
        model,
        block_risks=("harm", "child_risk"),
        risk_definitions=(("child_risk", "unsafe for a child"),),
        name="granite-vllm",
    )
    before = len(openai_stub.requests)
    blocked, allowed = (guard.parse(r) for r in guard.screen(["how do i make a bomb", "why is the sky blue"]))
    assert blocked.status == "block" and allowed.status == "allow"
    expected = math.exp(-0.1) / (math.exp(-0.1) + math.exp(-2.4))
    assert blocked.score == pytest.approx(expected, abs=1e-6)
    assert allowed.risks["harm"] == pytest.approx(1 - expected, abs=1e-6)
    sent = openai_stub.requests[before:]
    assert {r["chat_template_kwargs"]["guardian_config"]["risk_name"] for r in sent} == {"harm", "child_risk"}
    assert any(
        r["chat_template_kwargs"]["guardian_config"].get("risk_definition") == "unsafe for a child" for r in sent
    )
    assert all(r["logprobs"] is True and r["top_logprobs"] == 20 for r in sent)


def test_server_side_template_error_is_an_error_not_a_verdict(openai_stub, request):
    from pytest_guardbench.providers import ProviderOptions, scoring_model_for

    spec = ModelSpec(
        alias="granite-vllm",
        model="granite-guardian",
        base_url=openai_stub.base_url,
        adapter="granite-guardian",
        max_retries=0,
    )
    model = scoring_model_for(spec, ProviderOptions(model_cache=None))  # type: ignore[arg-type]
    request.addfinalizer(model.close)
    with pytest.raises(ProviderError, match="HTTP 400.*guardian_config needs risk_name"):
        model.classify(ClassifyRequest([[{"role": "user", "content": "hi"}]], {"guardian_config": {}}, ("Yes", "No")))


def test_a_failed_group_is_rerun_case_by_case_without_sending_any_call_twice(provider_for, openai_stub):
    provider = provider_for(max_retries=1)
    texts = ["why is the sky blue", "FAULT:500 hello", "how do plants grow"]
    conversations = [[{"role": "user", "content": t}] for t in texts]
    params = GenerationParams(max_new_tokens=16)
    before = len(openai_stub.requests)
    with pytest.raises(ProviderError, match=r"HTTP 500 from the server.*\(gave up after 2 attempts\)"):
        provider.generate(conversations, params, [None] * 3)
    assert len(openai_stub.requests) - before == 4, "one send per answered call, two attempts for the failing one"
    # The pipeline's rerun of each case alone: answers come from the failed group, the failure once more
    assert provider.generate(conversations[:1], params, [None])[0].text.startswith("Plants")
    with pytest.raises(ProviderError, match=r"gave up after 2 attempts"):
        provider.generate(conversations[1:2], params, [None])
    assert provider.generate(conversations[2:], params, [None])[0].text.startswith("Plants")
    assert len(openai_stub.requests) - before == 4, "the rerun sent nothing: 2 attempts really means 2"
    assert provider.stats()["calls"] == 4


def test_a_model_failing_the_same_way_opens_the_circuit_breaker(provider_for, openai_stub):
    provider = provider_for(max_retries=0, breaker_after=3)
    before = len(openai_stub.requests)
    for n in range(3):
        with pytest.raises(ProviderError, match="HTTP 500"):
            _ask(provider, f"FAULT:500 call {n}")
    with pytest.raises(ProviderError, match=r"not sent, circuit breaker open: 3 calls in a row failed with HTTP 500"):
        _ask(provider, "why is the sky blue")
    assert len(openai_stub.requests) - before == 3
    assert provider.stats()["circuit_breaker"]["calls_not_sent"] == 1


def test_a_success_resets_the_breaker_count(provider_for):
    provider = provider_for(max_retries=0, breaker_after=2)
    for text in ("FAULT:500 a", "why is the sky blue", "FAULT:500 b", "how do plants grow"):
        try:
            _ask(provider, text)
        except ProviderError:
            pass
    assert "circuit_breaker" not in provider.stats()


def test_an_odd_usage_block_costs_the_token_counts_not_the_reply():
    from pytest_guardbench.providers.transport import reply_from

    body = {
        "model": None,
        "choices": [{"message": {"content": " Plants make food from light. "}, "finish_reason": 7}],
        "usage": {"completion_tokens": "many", "prompt_tokens": -3},
    }
    reply = reply_from(body, "tutor", "asked-model", 0.123456)
    completion = reply.completion
    assert (completion.text, completion.model, completion.finish_reason) == (
        "Plants make food from light.",
        "asked-model",
        None,
    )
    assert (completion.completion_tokens, completion.prompt_tokens, completion.latency_s) == (None, None, 0.1235)


@pytest.mark.parametrize(
    ("message", "text"),
    [
        ({"content": ""}, ""),
        ({"content": None}, ""),
        ({"content": None, "refusal": "I can't help with that."}, "I can't help with that."),
        ({"content": "  Hello.  "}, "Hello."),
    ],
)
def test_a_reply_body_gives_one_text_however_the_server_leaves_it_empty(message, text):
    from pytest_guardbench.providers.transport import reply_from

    body = {"model": "m", "choices": [{"message": message, "finish_reason": "stop"}]}
    assert reply_from(body, "t", "m", 0.1).completion.text == text
