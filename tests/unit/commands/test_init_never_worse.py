"""`guardbench init` never leaves a project worse than it found it: a value that cannot be written is
refused before anything is (a line break, a byte that is not UTF-8, a key), every file is written or
none is, `--force` sets what it is given, pytest 9's native tables are written into, and a file init
cannot read or a --dir that is a file is one line. Exit 4 leaves the folder byte for byte as it was;
exit 0 leaves a project pytest starts in."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import iniconfig
import pytest

from pytest_guardbench.commands.exit_status import USAGE_ERROR
from pytest_guardbench.commands.init import suite_cases
from pytest_guardbench.commands.main import main

APP_TEST = "def test_app():\n    assert True\n"
SECRET = "sk-init-planted-Zq7RbW2xK9vTnP4m"
# Two tutors of the project's own, so that a run's collection succeeds without a model.
TWO_TUTORS = (
    "def pytest_guardbench_register_providers(registry):\n"
    "    registry.register('tutor-a', lambda options: None, 'A.')\n"
    "    registry.register('tutor-b', lambda options: None, 'B.')\n"
    "    registry.register('my \"odd\" tutor\\\\1', lambda options: None, 'Quotes and a backslash.')\n"
)
FAST = ("--guardrail", "keyword", "--judge", "rules")


def _init(folder: Path, *extra: str) -> int:
    return main(["init", "--dir", str(folder), "--no-models", *extra])


def snapshot(folder: Path) -> dict[str, tuple[bytes | None, int]]:
    """Every path under `folder`: a file's bytes (None for a folder) and its mode."""
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None, p.stat().st_mode)
        for p in sorted(folder.rglob("*"))
    }


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    assert SECRET not in captured.out + captured.err
    return lines[0]


def pytest_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=folder,
        env={**env, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def a_project(folder: Path, settings: tuple[str, str] | None = None) -> Path:
    """A project with a test of its own, its two tutors, and its pytest settings in `settings`."""
    (folder / "app_tests").mkdir(parents=True)
    (folder / "app_tests" / "test_app.py").write_text(APP_TEST)
    (folder / "conftest.py").write_text(TWO_TUTORS)
    if settings is not None:
        (folder / settings[0]).write_text(settings[1])
    return folder


@pytest.mark.parametrize(
    "tutor",
    [
        "scripted\nguardbench_retries = 0",
        "scripted\rguardbench_retries = 0",
        "scripted\u2028guardbench_retries = 0",
        "scripted\x00",
        "my\u202etutor",
        " scripted",
        "",
    ],
    ids=["newline", "carriage-return", "line-separator", "nul", "bidi-override", "leading-space", "empty"],
)
def test_a_value_that_would_break_the_settings_is_refused_and_nothing_written(tmp_path, capsys, tutor):
    # The first hour's report: the newline put `guardbench_retries = 0` into pytest.ini, exit 0.
    project = a_project(tmp_path, ("pytest.ini", "[pytest]\naddopts = -q\ntestpaths = app_tests\n"))
    before = snapshot(project)
    assert _init(project, "--tutor", tutor) == USAGE_ERROR
    line = one_error_line(capsys)
    assert line.startswith("guardbench init: --tutor: the value ") and "nothing written" in line
    assert snapshot(project) == before


def test_a_byte_that_is_not_utf8_is_refused_before_anything_is_written(tmp_path):
    # The first hour's report: `init --tutor $'my\xfftutor'` wrote a pyproject.toml that is not TOML,
    # then exited 4, and pytest no longer started in the folder. A real command line, real bytes.
    project = a_project(tmp_path, ("pyproject.toml", '[project]\nname = "mine"\n'))
    before = snapshot(project)
    done = subprocess.run(
        [sys.executable, "-m", "pytest_guardbench.commands.main", "init", "--dir", str(project), "--no-models"]
        + ["--tutor", b"my\xfftutor"],  # type: ignore[list-item]
        capture_output=True,
        text=True,
        errors="replace",
        timeout=300,
    )
    assert done.returncode == USAGE_ERROR, done.stdout + done.stderr
    assert done.stderr.strip() == (
        "guardbench init: --tutor: the value is not valid UTF-8 text (a byte that is not UTF-8, or half of a "
        "surrogate pair); nothing written"
    )
    assert snapshot(project) == before
    run = pytest_in(project, "app_tests", "-q")
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout + run.stderr


@pytest.mark.parametrize(
    ("name", "text", "read"),
    [
        ("pyproject.toml", '[tool.pytest.ini_options]\ntestpaths = ["app_tests"]\n', "toml-ini"),
        ("pyproject.toml", '[tool.pytest]\ntestpaths = ["app_tests"]\n', "toml-native"),
        ("pytest.ini", "[pytest]\ntestpaths = app_tests\n", "ini"),
        ("setup.cfg", "[tool:pytest]\ntestpaths = app_tests\n", "ini"),
    ],
    ids=["ini-options", "native", "pytest.ini", "setup.cfg"],
)
def test_force_sets_the_roles_it_is_given(tmp_path, capsys, name, text, read):
    # The first hour's report: `init --force --tutor b` in a folder set up with `--tutor a` said
    # "already set up ... nothing written" and kept a.
    if read == "toml-native" and pytest.version_tuple < (9,):
        pytest.skip("pytest 9 reads [tool.pytest]")
    project = a_project(tmp_path, (name, text))
    assert _init(project, "--tutor", "tutor-a", *FAST) == 0
    assert _init(project, "--force", "--tutor", "tutor-b") == 0
    out = capsys.readouterr().out
    assert "set guardbench_tutor (--force)" in out and "nothing written" not in out
    settings = project / name
    if read.startswith("toml"):
        document = tomllib.loads(settings.read_text())["tool"]["pytest"]
        table = document["ini_options"] if read == "toml-ini" else document
    else:
        table = dict(iniconfig.IniConfig(str(settings)).sections["tool:pytest" if name == "setup.cfg" else "pytest"])
    assert table["guardbench_tutor"] == "tutor-b" and settings.read_text().count("guardbench_tutor =") == 1
    assert table["guardbench_guardrail"] == "keyword", "a role not given keeps its value"
    # Without --force the folder is reported, not changed.
    before = snapshot(project)
    assert _init(project, "--tutor", "tutor-a") == 0
    assert '(you asked for "tutor-a"; init --force sets it)' in capsys.readouterr().out
    assert snapshot(project) == before
    collected = pytest_in(project, "--collect-only", "-q")
    assert "app_tests/test_app.py::test_app" in collected.stdout and suite_cases(collected.stdout) == 396


def test_a_name_with_quotes_and_a_backslash_reads_back_as_given(tmp_path, capsys):
    project = a_project(tmp_path)
    tutor = 'my "odd" tutor\\1'
    assert _init(project, "--tutor", tutor, *FAST) == 0, capsys.readouterr().err
    ini = tomllib.loads((project / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert ini["guardbench_tutor"] == tutor


@pytest.mark.parametrize(
    "in_the_way",
    [".gitignore/", "pyproject.toml/", "tests", "tests/test_guardbench.py/", ".github", ".github/workflows"],
)
def test_a_failure_part_way_writes_no_file(tmp_path, capsys, in_the_way):
    # The first hour's report: with .gitignore a folder, the test module, workflow and pyproject.toml
    # were written before init failed on it. A name ending in / is a folder where a file goes; the
    # others are files where a folder goes.
    project = a_project(tmp_path, ("pyproject.toml", '[project]\nname = "mine"\n'))
    target = project / in_the_way.rstrip("/")
    if in_the_way.endswith("/"):
        target.unlink(missing_ok=True)
        target.mkdir(parents=True)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("in the way\n")
    before = snapshot(project)
    assert _init(project, "--force", *FAST) == USAGE_ERROR
    line = one_error_line(capsys)
    assert f"guardbench init: {target}: is a f" in line and "nothing written" in line
    assert snapshot(project) == before, "no file written, no temporary file left"


def test_a_read_only_file_is_not_replaced(tmp_path, capsys):
    project = a_project(tmp_path, ("pyproject.toml", '[project]\nname = "mine"\n'))
    (project / ".gitignore").write_text("build/\n")
    (project / ".gitignore").chmod(0o444)
    before = snapshot(project)
    assert _init(project, *FAST) == USAGE_ERROR
    assert f"{project / '.gitignore'}: is read-only; nothing written" in one_error_line(capsys)
    assert snapshot(project) == before


@pytest.mark.parametrize(
    "tutor",
    [
        f"vllm:tutor-model@http://127.0.0.1:9/v1?key={SECRET}",
        f"openai:{SECRET}",
        "vllm:tutor-model@http://127.0.0.1:9/v1?api_key=0123456789abcdef0123",
        "vllm:tutor-model@http://team:hunter2hunter2@127.0.0.1:9/v1",
        "vllm:tutor-model@http://127.0.0.1:9/v1#hunter2hunter2",
        f"vllm:{SECRET[3:]}@http://127.0.0.1:9/v1",
    ],
    ids=["key-in-key", "key-shaped-model", "query", "password", "fragment", "a-secret-variables-value"],
)
def test_no_key_reaches_a_file_init_writes(tmp_path, capsys, monkeypatch, tutor):
    # The first hour's report: init refused a key in --tutor's URL without echoing it, but had already
    # written it into pyproject.toml.
    monkeypatch.setenv("TEAM_TUTOR_API_KEY", SECRET[3:])  # known by its value, whatever its shape
    project = a_project(tmp_path, ("pyproject.toml", '[project]\nname = "mine"\n'))
    before = snapshot(project)
    assert _init(project, "--tutor", tutor) == USAGE_ERROR
    line = one_error_line(capsys)
    assert line.startswith("guardbench init: --tutor: the value ")
    assert "hunter2" not in line and "0123456789abcdef" not in line and SECRET[3:] not in line
    assert snapshot(project) == before


@pytest.mark.skipif(pytest.version_tuple < (9,), reason="pytest 9 reads [tool.pytest] and pytest.toml")
@pytest.mark.parametrize(
    ("name", "text", "table"),
    [
        ("pyproject.toml", '[tool.pytest]\ntestpaths = ["app_tests"]\naddopts = ["-q"]\nxfail_strict = true\n', 1),
        ("pytest.toml", '[pytest]\ntestpaths = ["app_tests"]\nxfail_strict = true\n', 0),
    ],
    ids=["tool.pytest", "pytest.toml"],
)
def test_a_pytest_9_native_table_is_written_into(tmp_path, capsys, name, text, table):
    # The first hour's report: [tool.pytest.ini_options] was appended beside [tool.pytest], and pytest
    # then refused the folder.
    project = a_project(tmp_path, (name, text))
    assert _init(project, *FAST) == 0, capsys.readouterr().err
    assert "added guardbench keys under " + ("[tool.pytest]" if table else "[pytest]") in capsys.readouterr().out
    document = tomllib.loads((project / name).read_text())
    native = document["tool"]["pytest"] if table else document["pytest"]
    assert "ini_options" not in native and native["xfail_strict"] is True
    assert native["testpaths"] == ["app_tests", "tests"] and native["guardbench_data"] == ["child_safety_v1"]
    assert native["guardbench_max_fpr"] == "0.25", "a string, the type pytest 9 checks the key against"
    run = pytest_in(project, "app_tests")
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout + run.stderr
    collected = pytest_in(project, "--collect-only", "-q")
    assert suite_cases(collected.stdout) == 396, collected.stdout + collected.stderr


def test_both_pytest_tables_are_one_line_not_a_guess(tmp_path, capsys):
    text = '[tool.pytest]\naddopts = ["-q"]\n\n[tool.pytest.ini_options]\ntestpaths = ["app_tests"]\n'
    project = a_project(tmp_path, ("pyproject.toml", text))
    before = snapshot(project)
    assert _init(project) == USAGE_ERROR
    assert "has both [tool.pytest] (pytest 9's native table) and [tool.pytest.ini_options]" in one_error_line(capsys)
    assert snapshot(project) == before


@pytest.mark.parametrize("name", ["pyproject.toml", "pytest.ini", "setup.cfg", "tox.ini", "pytest.toml", ".gitignore"])
def test_a_file_that_is_not_utf8_is_one_line_naming_it(tmp_path, capsys, name):
    # The first hour's report: a pyproject.toml that is not UTF-8 ended in exit 3, UnicodeDecodeError.
    project = a_project(tmp_path)
    (project / name).write_bytes(b"# caf\xe9\n[pytest]\n")
    before = snapshot(project)
    assert _init(project) == USAGE_ERROR
    assert one_error_line(capsys) == (
        f"guardbench init: {project / name}: not UTF-8 text (byte 5), which init cannot add to; save it as UTF-8, "
        "or pass --dir to another folder"
    )
    assert snapshot(project) == before


def test_dir_names_a_file_or_nothing(tmp_path, capsys):
    # The first hour's report: `init --dir afile` said "no such folder" for a file that exists.
    afile = tmp_path / "afile"
    afile.write_text("mine\n")
    assert _init(afile) == USAGE_ERROR
    assert one_error_line(capsys) == (
        f"guardbench init: --dir {afile}: is a file, not a folder; pass --dir the folder to set up"
    )
    assert _init(tmp_path / "nope") == USAGE_ERROR
    assert one_error_line(capsys) == f"guardbench init: --dir {tmp_path / 'nope'}: no such folder"
    assert _init(Path("a\x00b")) == USAGE_ERROR
    # Shown escaped; whether Python calls a NUL in a name absent or unusable depends on its version.
    assert one_error_line(capsys).startswith("guardbench init: --dir a\\u0000b: ")
    assert afile.read_text() == "mine\n"
