"""Local guard models load the way transformers users expect, through the plugin: downloaded on
first use from a hub (a loopback server speaking the hub's file protocol, HF_ENDPOINT pointed at
it), then from the cache, also offline; from a folder; from a cache entry laid out by hand. Each way
it cannot load is one usage-error line (exit 4) before any test runs, with no report folder."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import read_summary, write_project
from tests.hub_stub import COMMIT, HubStub
from tests.tiny_models import GRANITE_32_TEMPLATE, GRANITE_33_TEMPLATE, build_successor_model

REPO = "acme/granite-guardian-3.3-tiny"
ANSWER_33 = "<|think_off|> <score> yes </score> <|eos|>"


@pytest.fixture(scope="module")
def granite33_folder(tmp_path_factory):
    return build_successor_model(tmp_path_factory.mktemp("gg33"), ANSWER_33, GRANITE_33_TEMPLATE, also="no")


@pytest.fixture
def hub(monkeypatch, tmp_path):
    with HubStub() as stub:
        monkeypatch.setenv("HF_ENDPOINT", stub.url)
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
        monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
        for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
            monkeypatch.delenv(name, raising=False)
        yield stub


def _alias(pytester, model, **fields):
    extra = "".join(f"{key} = {value}\n" for key, value in fields.items())
    pytester.path.joinpath("pyproject.toml").write_text(
        f'[tool.guardbench.models.gg]\nprovider = "hf-local"\nmodel = "{model}"\nadapter = "granite-guardian"\n{extra}'
    )


def _usage_error(result, pytester, *lines):
    assert result.ret == 4, result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines(list(lines))
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    assert not (pytester.path / "reports").exists(), "nothing is written for a run that never started"


def test_downloads_on_first_use_then_runs_from_the_cache_offline(pytester, hub, granite33_folder):
    hub.add(REPO, granite33_folder)
    write_project(pytester)
    _alias(pytester, REPO)
    result = pytester.runpytest_subprocess("-p", "no:xdist", "--guardrail=gg")
    # Every prompt is blocked by the tiny guard: recall 1, and the two safe prompts are over-refused.
    assert result.ret == 1, result.stdout.str()
    summary = read_summary(pytester)
    assert summary["guard_decisions"]["gg"]["all"]["block"]["count"] == 6
    assert f"GET /{REPO}/resolve/{COMMIT}/model.safetensors" in hub.requests

    shutil.rmtree(pytester.path / "reports")
    hub.requests.clear()
    offline = pytester.runpytest_subprocess("-p", "no:xdist", "--guardrail=gg", "--guardbench-offline")
    assert offline.ret == 1, offline.stdout.str()
    assert read_summary(pytester)["guard_decisions"]["gg"]["all"]["block"]["count"] == 6
    assert hub.requests == [], "offline runs never ask the hub"


def test_a_gated_model_without_a_token_names_the_licence_page_and_the_variable(pytester, hub, granite33_folder):
    hub.add("acme/granite-guardian-gated", granite33_folder, gated=True)
    write_project(pytester)
    _alias(pytester, "acme/granite-guardian-gated")
    result = pytester.runpytest_subprocess("-p", "no:xdist", "--guardrail=gg")
    _usage_error(
        result,
        pytester,
        f"ERROR: guardbench: --guardrail=gg: acme/granite-guardian-gated is a gated repository: accept its licence at {hub.url}/acme/granite-guardian-gated, then set HF_TOKEN *",
    )


def test_with_the_token_a_gated_model_downloads(pytester, hub, granite33_folder, monkeypatch):
    hub.add("acme/granite-guardian-gated", granite33_folder, gated=True)
    monkeypatch.setenv("HF_TOKEN", hub.token)
    write_project(pytester)
    _alias(pytester, "acme/granite-guardian-gated", granite_version='"3.3"')
    result = pytester.runpytest_subprocess("-p", "no:xdist", "--guardrail=gg")
    assert result.ret == 1, result.stdout.str() + result.stderr.str()
    assert read_summary(pytester)["guard_decisions"]["gg"]["all"]["block"]["count"] == 6
    run = next((pytester.path / "reports").iterdir())
    assert all(hub.token not in path.read_text() for path in run.iterdir() if path.is_file())


def test_the_builtin_granite_alias_offline_and_not_cached_is_one_line(pytester, hub):
    write_project(pytester)
    result = pytester.runpytest_subprocess("-p", "no:xdist", "--guardrail=granite", "--guardbench-offline")
    _usage_error(
        result,
        pytester,
        "ERROR: guardbench: --guardrail=granite: ibm-granite/granite-guardian-3.2-3b-a800m is not in the local Hugging Face cache (*) and offline mode is on; download it once with `hf download ibm-granite/granite-guardian-3.2-3b-a800m`, or run without --guardbench-offline / HF_HUB_OFFLINE",
    )
    assert len(result.stderr.str().strip().splitlines()) == 1, "one line, no traceback"
    assert hub.requests == []


def test_the_builtin_granite_alias_online_and_not_on_the_hub_is_one_line(pytester, hub):
    # Online, with the hub answering: the model is fetched from it, and this hub does not have it.
    write_project(pytester)
    result = pytester.runpytest_subprocess("-p", "no:xdist", "--guardrail=granite")
    _usage_error(
        result,
        pytester,
        "ERROR: guardbench: --guardrail=granite: ibm-granite/granite-guardian-3.2-3b-a800m is not a model on the hub *",
    )
    assert any("granite-guardian-3.2-3b-a800m" in r for r in hub.requests), "online, the hub is asked"


def test_an_unknown_model_id_is_one_line(pytester, hub):
    write_project(pytester)
    _alias(pytester, "acme/no-such-guard")
    result = pytester.runpytest_subprocess("-p", "no:xdist", "--guardrail=gg")
    _usage_error(result, pytester, "ERROR: guardbench: --guardrail=gg: acme/no-such-guard is not a model on the hub *")


def test_a_template_that_rejects_the_versions_configuration_is_one_line(pytester, hub, granite33_folder):
    # A Granite 3.3 model declared as 3.2: its template refuses `risk_name`.
    write_project(pytester)
    _alias(pytester, granite33_folder, granite_version='"3.2"')
    result = pytester.runpytest_subprocess("-p", "no:xdist", "--guardrail=gg")
    _usage_error(
        result,
        pytester,
        f"ERROR: guardbench: --guardrail=gg: {granite33_folder}: its chat template rejected guardian_config={{'risk_name': 'harm'}}: use criteria_id; risk_name is 3.2; check the alias's *",
    )


def test_weights_that_do_not_load_stop_the_run_with_one_line(pytester, hub, granite33_folder, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(granite33_folder, broken)
    (broken / "model.safetensors").unlink()
    write_project(pytester)
    _alias(pytester, broken, granite_version='"3.3"')
    result = pytester.runpytest_subprocess("-p", "no:xdist", "--guardrail=gg")
    assert result.ret == 4, result.stdout.str()
    result.stdout.fnmatch_lines(["*guardbench: the run's models could not be built: *"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert not (pytester.path / "reports").exists()


def test_a_hand_made_cache_entry_loads_offline(pytester, monkeypatch, tmp_path, granite33_folder):
    # The cache layout huggingface_hub documents: models--<owner>--<name>/{refs/main, snapshots/<commit>/...}.
    cache = tmp_path / "hf-cache"
    entry = cache / "models--acme--granite-guardian-3.2-cached"
    shutil.copytree(granite33_folder, entry / "snapshots" / COMMIT)
    (entry / "refs").mkdir()
    (entry / "refs" / "main").write_text(COMMIT)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    write_project(pytester)
    _alias(pytester, "acme/granite-guardian-3.2-cached", granite_version='"3.3"')
    result = pytester.runpytest_subprocess("-p", "no:xdist", "--guardrail=gg")
    assert result.ret == 1, result.stdout.str() + result.stderr.str()
    assert read_summary(pytester)["guard_decisions"]["gg"]["all"]["block"]["count"] == 6


def test_think_on_a_version_without_it_is_a_usage_error(pytester, granite33_folder):
    write_project(pytester)
    _alias(pytester, "ibm-granite/granite-guardian-3.2-5b", think="true")
    result = pytester.runpytest_subprocess("-p", "no:xdist", "--guardrail=gg")
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        [
            "ERROR: guardbench: --guardrail=gg: think = true needs Granite Guardian 3.3; ibm-granite/granite-guardian-3.2-5b is 3.2"
        ]
    )


def test_32_folder_through_the_plugin(pytester, tmp_path):
    folder = build_successor_model(
        tmp_path / "gg32", "<|start_of_role|>assistant<|end_of_role|> No <|eos|>", GRANITE_32_TEMPLATE, also="Yes"
    )
    write_project(pytester)
    _alias(pytester, folder, granite_version='"3.2"')
    result = pytester.runpytest_subprocess("-p", "no:xdist", "--guardrail=gg")
    summary = read_summary(pytester)
    assert summary["guard_decisions"]["gg"]["all"]["allow"]["count"] == 6, result.stdout.str()
