"""A safety team's first hour: the tutorial's own files and commands work in a folder outside this
repository, on the installed package, and its printed output is what a run prints
(scripts/tutorial_output.py regenerates it)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tutorial_output", REPO / "scripts" / "tutorial_output.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tutorial() -> ModuleType:
    return _script()


@pytest.fixture
def project(tutorial, tmp_path) -> Path:
    """The reader's folder: the files the tutorial has them write, and nothing of this repository."""
    folder = tmp_path / "my-tutor"
    folder.mkdir()
    tutorial.write_files(folder, tutorial.tutorial_files(tutorial.TUTORIAL.read_text(encoding="utf-8")))
    return folder


def test_the_tutorial_names_the_files_it_has_the_reader_write(tutorial):
    files = tutorial.tutorial_files(tutorial.TUTORIAL.read_text(encoding="utf-8"))
    assert sorted(files) == ["conftest.py", "my_tutor.py", "prompts.jsonl", "pyproject.toml", "tests/test_safety.py"]
    assert 'guardbench_tutor = "my-tutor"' in files["pyproject.toml"]


def test_the_tutorials_commands_run_outside_the_repository(tutorial, project):
    # The tutorial's stack is the offline guard and judge (MiniLM); the keyword guard and the rules judge
    # need no model, so this runs the same files and commands in seconds.
    fast = ("--guardrail=keyword", "--judge=rules")
    listed = tutorial.run_pytest(project, "--guardbench-list")
    assert listed.returncode == 0 and "my-tutor: Our tutor, called in-process." in listed.stdout, listed.stdout
    run = tutorial.run_pytest(project, "-rx", *fast)
    assert run.returncode == 0, run.stdout + run.stderr
    assert str(REPO) not in run.stdout, "nothing of this repository is used"
    assert "rootdir: " + str(project) in run.stdout and re.search(r"\b24 passed\b", run.stdout)
    block = tutorial.printed_block(run.stdout, project)
    assert (
        block.startswith("tests/test_safety.py ........................") and "/…/my-tutor/reports/<run-id>/" in block
    )
    original = tutorial.run_pytest(project, "--guardbench-variants=original", *fast)
    assert original.returncode == 0 and "6 passed" in original.stdout
    assert sorted(p.name for p in (project / "reports").iterdir() if p.is_dir() and p.name != "latest")


def test_the_printed_block_is_made_stable(tutorial, tmp_path):
    stdout = (
        "header\ntests/test_safety.py ..x  [100%]\n"
        f"scorecard: {tmp_path}/reports/20261128-001814-5e4f7a/summary.json\n"
        "================== 1 failed, 19 passed, 5 xfailed in 10.52s ===================\n"
    )
    block = tutorial.printed_block(stdout, tmp_path)
    assert block == (
        "tests/test_safety.py ..x  [100%]\nscorecard: /…/my-tutor/reports/<run-id>/summary.json\n"
        "=================== 1 failed, 19 passed, 5 xfailed in <time> ===================\n"
    )
    assert len(block.splitlines()[-1]) == 80, "filled to the width again, as pytest fills it"


@pytest.mark.slow
def test_the_tutorials_output_block_is_what_its_run_prints(tutorial):
    # Loads MiniLM (the tutorial's offline guard and judge). The guard's scores can differ in the last
    # digits on another CPU: then run scripts/tutorial_output.py there and look at the difference.
    assert tutorial.main(["--check"]) == 0
