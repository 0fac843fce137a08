"""The README's 30-second example works outside this repository, in a project set up by `guardbench
init` on the installed package: its `pytest` lines collect the cases they name, its `screen` line
runs, and the lines about a finished run (`reports/<run-id>`) name only subcommands and options the
command has."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_guardbench.commands.main import build_parser, main

README = Path(__file__).resolve().parents[2] / "README.md"


def _example_lines() -> list[list[str]]:
    text = README.read_text(encoding="utf-8")
    block = text.split("## A 30-second example", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    lines = []
    for line in block.splitlines():
        command = line.split("  #", 1)[0].strip()
        if command:
            lines.append(shlex.split(command))
    return lines


def test_the_readme_example_has_pytest_and_guardbench_lines():
    lines = _example_lines()
    assert any(line[0].endswith("pytest") for line in lines) and any(line[0].endswith("guardbench") for line in lines)
    assert not any("suites/" in word or "pytest_guardbench/" in word for line in lines for word in line), (
        "the example is for a user's repository: no path of this one"
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("team") / "repo"
    folder.mkdir()
    assert main(["init", "--dir", str(folder), "--no-models"]) == 0
    return folder


@pytest.mark.parametrize("argv", [line for line in _example_lines() if line[0].endswith("pytest")], ids=" ".join)
def test_each_pytest_line_collects_outside_the_repository(project, argv):
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_XDIST_WORKER"}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *argv[1:], "--collect-only", "-q", "-p", "no:randomly"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "Traceback" not in run.stdout + run.stderr


@pytest.mark.slow
def test_the_screen_line_runs_outside_the_repository(project, monkeypatch, capsys):
    [argv] = [line for line in _example_lines() if line[1:2] == ["screen"]]
    monkeypatch.chdir(project)
    assert main(argv[1:]) == 0, capsys.readouterr().err
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "offline" in captured.out


@pytest.mark.parametrize(
    "argv",
    [line for line in _example_lines() if line[0].endswith("guardbench") and "reports/<run-id>" in " ".join(line)],
    ids=" ".join,
)
def test_each_line_about_a_finished_run_names_a_real_subcommand_and_options(argv):
    words = [w.replace("<run-id>", "20260101-000000-abcdef") for w in argv[1:]]
    args = build_parser().parse_args(words)  # an unknown option or choice exits 4 here
    assert args.command == words[0]
