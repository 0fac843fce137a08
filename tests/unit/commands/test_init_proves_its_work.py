"""`guardbench init` proves its work: it collects the suite as the user's `pytest` will (testpaths,
pytest.ini, setup.cfg, tox.ini) and fails with the fix when no guardbench case is collected; it names
the user's stack or says the settings are the demo; a rerun says "already set up" and what differs;
it ignores what a run writes; a folder it cannot write is one line, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pytest_guardbench.commands import init
from pytest_guardbench.commands.exit_status import USAGE_ERROR
from pytest_guardbench.commands.main import main
from pytest_guardbench.settings.starter import DEMO_STACK_LINES

APP_TEST = "def test_app():\n    assert True\n"


def _init(folder: Path, *extra: str) -> int:
    return main(["init", "--dir", str(folder), "--no-models", *extra])


def _collected(folder: Path) -> str:
    """What the user's own `pytest --collect-only -q` collects there."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q"], cwd=folder, capture_output=True, text=True
    )
    return done.stdout


def _snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every path under `folder`: a file's bytes, None for a folder."""
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None) for p in sorted(folder.rglob("*"))
    }


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_a_project_whose_testpaths_leave_out_tests_gets_them_and_the_gate_is_collected(tmp_path, capsys):
    # The first hour's report: testpaths = ["app_tests"], init said it added the keys, pytest ran 1 test.
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["app_tests"]\n')
    (tmp_path / "app_tests").mkdir()
    (tmp_path / "app_tests" / "test_app.py").write_text(APP_TEST)
    assert _init(tmp_path) == 0
    out = capsys.readouterr().out
    ini = tomllib.loads((tmp_path / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert ini["testpaths"] == ["app_tests", "tests"]
    assert 'added "tests" to testpaths' in out
    assert "checked: python -m pytest --collect-only collects 396 guardbench cases from tests/test_guardbench.py" in out
    collected = _collected(tmp_path)
    assert "app_tests/test_app.py::test_app" in collected and "tests/test_guardbench.py::test_case[" in collected


def test_testpaths_init_cannot_edit_fail_with_one_line_and_the_fix(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = [\n  "app_tests",\n]\n')
    (tmp_path / "app_tests").mkdir()
    (tmp_path / "app_tests" / "test_app.py").write_text(APP_TEST)
    before = _snapshot(tmp_path)
    assert _init(tmp_path) == USAGE_ERROR
    line = _one_error_line(capsys)
    assert line == (
        'guardbench init: pytest collects no guardbench case: testpaths = ["app_tests"] in pyproject.toml leaves out '
        'tests/; add "tests" to it: testpaths = ["app_tests", "tests"] (nothing written: init took back its files)'
    )
    assert _snapshot(tmp_path) == before, "a check that fails takes back every file init wrote"


@pytest.mark.parametrize(
    ("name", "section"), [("setup.cfg", "tool:pytest"), ("tox.ini", "pytest"), ("pytest.ini", "pytest")]
)
def test_the_settings_go_where_pytest_reads_them(tmp_path, capsys, name, section):
    # A pyproject.toml table would silently replace setup.cfg's or tox.ini's pytest settings.
    (tmp_path / name).write_text(f"[{section}]\ntestpaths = app_tests\naddopts = -ra\n")
    (tmp_path / "app_tests").mkdir()
    (tmp_path / "app_tests" / "test_app.py").write_text(APP_TEST)
    assert _init(tmp_path) == 0, capsys.readouterr().err
    assert not (tmp_path / "pyproject.toml").exists()
    text = (tmp_path / name).read_text()
    assert "testpaths = app_tests tests" in text and "guardbench_data = child_safety_v1" in text
    assert "addopts = -ra" in text
    assert "checked: python -m pytest --collect-only collects 396" in capsys.readouterr().out


def test_the_users_stack_is_written_and_without_it_the_settings_say_demo(tmp_path, capsys):
    mine, demo = tmp_path / "mine", tmp_path / "demo"
    mine.mkdir(), demo.mkdir()
    assert _init(mine, "--guardrail", "keyword", "--judge", "rules") == 0
    ini = tomllib.loads((mine / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert ini["guardbench_guardrail"] == "keyword" and ini["guardbench_judge"] == "rules"
    assert "DEMO" not in (mine / "pyproject.toml").read_text()
    assert _init(demo) == 0
    text = (demo / "pyproject.toml").read_text()
    assert all(line in text for line in DEMO_STACK_LINES)
    assert "guardbench_tutor" not in tomllib.loads(text)["tool"]["pytest"]["ini_options"]
    assert "register it in conftest.py" in text and "--tutor my-tutor" in text


def test_a_tutor_not_registered_yet_fails_with_the_fix_and_writes_nothing(tmp_path, capsys):
    assert _init(tmp_path, "--tutor", "my-tutor") == USAGE_ERROR
    line = _one_error_line(capsys)
    assert "--tutor=my-tutor: unknown tutor" in line and "register it in conftest.py" in line
    assert list(tmp_path.iterdir()) == [], "exit 4 leaves the folder as it was"
    (tmp_path / "conftest.py").write_text(
        "def pytest_guardbench_register_providers(registry):\n"
        "    registry.register('my-tutor', lambda options: None, 'Ours.')\n"
    )
    assert _init(tmp_path, "--tutor", "my-tutor") == 0, "registered: the rerun writes the starter and collects it"
    assert f"written {tmp_path / 'tests' / 'test_guardbench.py'}" in capsys.readouterr().out
    assert _init(tmp_path, "--tutor", "my-tutor") == 0
    assert "already set up" in capsys.readouterr().out


def test_a_rerun_says_already_set_up_and_what_differs_and_writes_nothing(tmp_path, capsys):
    assert _init(tmp_path) == 0
    assert _init(tmp_path) == 0
    out = capsys.readouterr().out
    assert "already set up in" in out and "nothing written (as init writes it)" in out
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('guardbench_max_fpr = "0.25"', 'guardbench_max_fpr = "0.3"'))
    (tmp_path / ".github" / "workflows" / "guardbench.yml").unlink()
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert _init(tmp_path, "--tutor", "smol") == 0
    out = capsys.readouterr().out
    assert "already set up in" in out
    assert '  differs: pyproject.toml: guardbench_max_fpr = "0.3" (init writes "0.25"; edit it there)' in out
    assert "  differs: .github/workflows/guardbench.yml is missing (init --force writes it)" in out
    assert '  differs: pyproject.toml: guardbench_tutor is not set (init writes "smol"; init --force adds it)' in out
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_gitignore_gets_the_run_folders_and_the_cache_once(tmp_path):
    (tmp_path / ".gitignore").write_text("__pycache__/\n/reports/*\n")
    assert _init(tmp_path) == 0
    text = (tmp_path / ".gitignore").read_text()
    assert text.startswith("__pycache__/\n/reports/*\n") and text.count("reports") == 1 and ".guardbench/" in text
    assert _init(tmp_path, "--force") == 0
    assert (tmp_path / ".gitignore").read_text() == text


def test_a_commented_table_header_is_added_to(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options]  # pytest settings\naddopts = '-q'\n")
    assert _init(tmp_path) == 0
    ini = tomllib.loads((tmp_path / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert ini["addopts"] == "-q" and ini["guardbench_data"] == ["child_safety_v1"] and ini["testpaths"] == ["tests"]


def test_a_read_only_folder_is_one_line_and_exit_4(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(init.os, "access", lambda path, mode: Path(path) != tmp_path)
    assert _init(tmp_path) == USAGE_ERROR
    assert _one_error_line(capsys) == (
        f"guardbench init: {tmp_path}: cannot write there (permission denied); nothing written, "
        "pass --dir to a folder you can write"
    )
    assert list(tmp_path.iterdir()) == [], "nothing is written when one file cannot be"


@pytest.mark.parametrize("failing", range(4))
def test_a_write_that_fails_anyway_takes_back_the_others(tmp_path, capsys, monkeypatch, failing):
    # Root passes every access check, and a full disk passes them too: the rename of the failing-th
    # file fails after the ones before it are in place, and every one is taken back.
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "mine"\n')
    (tmp_path / ".gitignore").write_text("build/\n")
    before = _snapshot(tmp_path)
    renames = []
    replace = os.replace

    def refuse_one(source, target):
        renames.append(target)
        if len(renames) == failing + 1:
            raise OSError(28, "No space left on device")
        replace(source, target)

    monkeypatch.setattr(os, "replace", refuse_one)
    assert _init(tmp_path) == USAGE_ERROR
    monkeypatch.undo()
    line = _one_error_line(capsys)
    assert f"{Path(renames[failing]).name}: cannot write it (No space left on device); nothing written" in line
    assert _snapshot(tmp_path) == before, "the files written before the failure are taken back, no temporary is left"


@pytest.mark.skipif(not hasattr(sys, "getuid") or sys.platform == "win32", reason="POSIX permissions")
def test_a_really_read_only_folder(tmp_path, capsys):
    import os

    if os.geteuid() == 0:
        pytest.skip("root writes into read-only folders")
    tmp_path.chmod(0o555)
    try:
        assert _init(tmp_path) == USAGE_ERROR
        assert "cannot write there" in _one_error_line(capsys)
    finally:
        tmp_path.chmod(0o755)


@pytest.mark.parametrize(
    ("output", "cases"),
    [
        (
            "tests/test_guardbench.py::test_case[a.b.original]\ntests/test_guardbench.py::test_case[a.b.typo]\n"
            "app/test_x.py::test_x\n\n3 tests collected in 0.1s\n",
            2,
        ),
        ("tests/test_guardbench.py: 396\napp/test_x.py: 1\n", 396),
        (
            "<Dir x>\n  <Dir tests>\n    <Module test_guardbench.py>\n      <Function test_case[a.b.original]>\n"
            "  <Module test_x.py>\n    <Function test_x[1]>\n",
            1,
        ),
        ("tests/test_guardbench.py::test_case\n", 0),
    ],
    ids=["q", "qq", "tree", "plugin-off"],
)
def test_the_suites_cases_are_counted_at_any_verbosity(output, cases):
    assert init.suite_cases(output) == cases
