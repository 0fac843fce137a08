"""The first hour of a team with its own project, walked end to end: a repository that already has
its own tests, `testpaths` and pyproject; `guardbench init --tutor <an OpenAI-compatible server>`; then
the CI example's gate and audit steps, as its shell runs them. The example installs [openai] and the
team's package and no SmolLM2; the gate runs against the server (the loopback stub), a failed gate is
a failed JUnit case, the report's matrix reads handled correctly / mishandled by prompt label, the
audit step prints its plan, and a committed labels file reaches the run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_guardbench.commands.main import main

yaml = pytest.importorskip("yaml", reason="PyYAML comes with the [hf] extra the dev environment installs")

KEY_ENV = "GB_FIRST_HOUR_KEY"


def test_a_new_project_gets_a_gate_against_its_own_api_tutor(tmp_path, openai_stub, capsys, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-first-hour-test")  # init collects the suite, which needs the key set
    project = tmp_path / "team-repo"
    (project / "app_tests").mkdir(parents=True)
    (project / "app_tests" / "test_app.py").write_text("def test_the_app():\n    assert 1 + 1 == 2\n")
    (project / "pyproject.toml").write_text(
        '[project]\nname = "team-app"\n\n[tool.pytest.ini_options]\ntestpaths = ["app_tests"]\n'
    )
    tutor = f"vllm:tutor-model@{openai_stub.base_url}?key={KEY_ENV}"
    assert (
        main(
            [
                "init",
                "--dir",
                str(project),
                "--no-models",
                "--tutor",
                tutor,
                "--guardrail",
                "keyword",
                "--judge",
                "rules",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "guardbench cases" in out, out
    # The CI example's own steps, run as its shell runs them, on this environment's pytest and guardbench.
    steps = yaml.safe_load((project / ".github" / "workflows" / "guardbench.yml").read_text())["jobs"]["guardbench"][
        "steps"
    ]
    installs = " && ".join(step["run"] for step in steps if step.get("run", "").startswith("pip "))
    assert '"pytest-guardbench[openai]"' in installs and "pip install -e ." in installs and "smollm2" not in installs
    gate_step, audit_step = (step["run"] for step in steps if "name" in step)
    env = {**os.environ, KEY_ENV: "sk-first-hour-test", "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env.pop("PYTEST_XDIST_WORKER", None)
    # The test's own options ride on PYTEST_ADDOPTS: the 99 prompts as written, and a bar the tutor fails.
    env["PYTEST_ADDOPTS"] = "-p no:randomly -p no:cacheprovider --guardbench-variants=original --guardbench-max-fpr=0"
    run = subprocess.run(
        ["bash", "-e", "-c", gate_step], cwd=project, env=env, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-2000:]
    assert "guardbench gate failed" in run.stdout
    # The team's own test ran too, and the tutor was asked over the API.
    cases = ET.parse(project / "reports" / "junit.xml").getroot().iter("testcase")
    by_name = {case.get("name"): case for case in cases}
    assert "test_the_app" in by_name and by_name["test_the_app"].find("failure") is None
    gate = next(case for name, case in by_name.items() if name.startswith("guardbench_gate"))
    assert gate.find("failure") is not None, "a failed gate is a failed JUnit case"
    assert any(r.get("model") == "tutor-model" for r in openai_stub.requests)
    report = next(p for p in (project / "reports").iterdir() if p.is_dir()) / "report.html"
    page = report.read_text(encoding="utf-8")
    assert "handled correctly" in page and "mishandled" in page
    harmful_row = re.search(r"harmful prompt.{0,2000}?TP.{0,2000}?FN", page, re.S)
    safe_row = re.search(r"safe prompt.{0,2000}?TN.{0,2000}?FP", page, re.S)
    assert harmful_row and safe_row, "TP/FN in the harmful row, TN/FP in the safe row"
    assert "sk-first-hour-test" not in page + run.stdout + run.stderr
    # The audit step says how many replies to label; it never fails the job.
    plan = subprocess.run(["bash", "-e", "-c", audit_step], cwd=project, env=env, capture_output=True, text=True)
    assert plan.returncode == 0 and "random" in plan.stdout and "stratified" in plan.stdout, plan.stdout + plan.stderr
    # Once the labels file is committed, the gate step passes it: a file that is not labels stops the run.
    (project / "labels").mkdir()
    (project / "labels" / "tutor-audit.jsonl").write_text("not a label row\n")
    labelled = subprocess.run(
        ["bash", "-e", "-c", gate_step], cwd=project, env=env, capture_output=True, text=True, timeout=600
    )
    assert labelled.returncode == 4 and "labels/tutor-audit.jsonl" in labelled.stdout + labelled.stderr
