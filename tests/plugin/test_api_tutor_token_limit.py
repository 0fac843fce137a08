"""An API tutor answers up to its server's own limit unless the run sets one; a local tutor keeps 64.
The limit sent is the one the summary states."""

from __future__ import annotations

import pytest

from tests.conftest import SMALL_PACK, read_summary, write_project


@pytest.mark.parametrize(
    "given, sent", [([], None), (["--guardbench-max-new-tokens=300"], 300)], ids=["server_limit", "set"]
)
def test_an_api_tutor_gets_the_servers_limit_unless_one_is_set(pytester, openai_stub, monkeypatch, given, sent):
    monkeypatch.setenv("GB_TOKENS_KEY", "sk-token-limit-test")
    write_project(pytester, pack=SMALL_PACK)
    before = len(openai_stub.requests)
    result = pytester.runpytest_subprocess(
        "-p",
        "no:xdist",
        f"--tutor=vllm:tutor-model@{openai_stub.base_url}?key=GB_TOKENS_KEY",
        "--guardbench-min-recall=0",
        "--guardbench-max-fpr=1",
        *given,
    )
    assert result.ret in (0, 1), result.stdout.str()
    tutor_calls = [
        r for r in openai_stub.requests[before:] if r.get("model") == "tutor-model" and len(r.get("messages", [])) > 1
    ]
    assert tutor_calls, "the tutor was called over the API"
    assert {r.get("max_tokens") for r in tutor_calls} == {sent}
    assert read_summary(pytester)["stack"]["max_new_tokens"] == sent


def test_a_local_tutor_keeps_its_limit_and_the_summary_states_it(run_guardbench):
    _, summary = run_guardbench("--guardbench-min-recall=0", "--guardbench-max-fpr=1")
    assert summary["stack"]["max_new_tokens"] == 64
