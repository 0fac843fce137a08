"""`guardbench init` on whatever a project holds and whatever it is given: --tutor values with control
characters, line breaks, bytes that are not UTF-8, quotes and key-shaped strings; --dir a folder (one
with an odd name), a file or nothing; existing settings in every file pytest reads (pytest 9's native
tables, both tables at once, TOML that does not parse, bytes that are not UTF-8, CRLF line ends); and a
write failure injected at each file init writes (a folder where it goes, a file where its folder goes,
a read-only file).

The contract: exit 0 with a project pytest collects and whose settings read back as given, or exit 4
with one line and the folder byte for byte as it was; never a traceback, never the planted key."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from pytest_guardbench.commands.init import suite_cases
from pytest_guardbench.commands.main import main
from pytest_guardbench.errors import UsageError
from pytest_guardbench.settings.starter import plan_starter
from pytest_guardbench.settings.starter_source import find_settings
from pytest_guardbench.settings.starter_values import checked_stack
from pytest_guardbench.settings.starter_workflow import StackNeeds
from tests.fuzz.conftest import SECRET, TRACEBACK, fuzz
from tests.fuzz.strategies import settings_files

pytestmark = pytest.mark.usefixtures("planted_key")

KEY_ENV = "GB_FUZZ_INIT_KEY"
CONFTEST = (
    "def pytest_guardbench_register_providers(registry):\n"
    "    registry.register('tutor-a', lambda options: None, 'A.')\n"
)
# Values a run collects without a model or a server: a tutor of the project's own, the embedded one,
# API models named by URL (with and without the key's variable).
GOOD_TUTORS = (
    "tutor-a",
    "smol",
    "vllm:m@http://127.0.0.1:9/v1",
    f"vllm:m@http://127.0.0.1:9/v1?key={KEY_ENV}",
)
PIECES = (
    "\n",
    "\r",
    "\x00",
    "\x1b[2J",
    "\x1b]52;c;aGk=\x07",
    "\u2028",
    "\u202e",
    "\u200b",
    "\udcff",
    "\udc80",
    '"',
    "'",
    "\\",
    "#",
    ";",
    "=",
    "[x]",
    " ",
    "\t",
    "🙂",
    "é",
    "${{ x }}",
    SECRET,
    "Bearer abcdefgh12345",
    "sk-0123456789abcdef",
    "hf_0123456789abcdef",
    "?key=",
    "?token=abc",
    "@",
    "http://u:p@h",
)
odd_value = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=6)), min_size=1, max_size=4).map("".join)
tutors = st.one_of(
    st.none(),
    st.sampled_from(GOOD_TUTORS),
    odd_value,
    odd_value.map(lambda v: f"vllm:m@http://127.0.0.1:9/v1?key={v}"),
    odd_value.map(lambda v: f"tutor-{v}"),
)
TARGETS = ("tests/test_guardbench.py", ".github/workflows/guardbench.yml", "pyproject.toml", ".gitignore")


def snapshot(folder: Path) -> dict[str, tuple[bytes | None, int]]:
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None, stat.S_IMODE(p.lstat().st_mode))
        for p in sorted(folder.rglob("*"))
    }


def _inject(project: Path, failure: tuple[str, str] | None) -> None:
    """A write failure at one file init writes: a folder where it goes, a file where its folder goes,
    or the file read-only."""
    if failure is None:
        return
    target, how = failure
    path = project / target
    if how == "folder":
        if path.is_file():
            path.unlink()
        path.mkdir(parents=True, exist_ok=True)
    elif how == "parent-file" and "/" in target:
        parent = project / target.split("/")[0]
        if not parent.exists():
            parent.write_text("in the way\n")
    elif how == "read-only":
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("# the team's\n")
        path.chmod(0o444)


def _collects(folder: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=folder,
        env={**env, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        errors="replace",
        timeout=300,
    )
    return done.stdout + done.stderr


@fuzz(examples=20)
@given(
    tutor=tutors,
    settings=settings_files(),
    failure=st.one_of(
        st.none(), st.tuples(st.sampled_from(TARGETS), st.sampled_from(["folder", "parent-file", "read-only"]))
    ),
    where=st.sampled_from(["folder", "odd-folder", "file", "missing", "odd-missing"]),
    odd_name=odd_value,
    force=st.booleans(),
)
def test_init_ends_in_a_project_pytest_collects_or_the_folder_as_it_was(
    capsys, monkeypatch, tutor, settings, failure, where, odd_name, force
):
    monkeypatch.setenv(KEY_ENV, "sk-fuzz-init-0123456789")
    with tempfile.TemporaryDirectory() as root:
        base = Path(root)
        project = base / (os.fsdecode(b"team \xff\x1b[2J\nrepo") if where == "odd-folder" else "team")
        project.mkdir()
        (project / "conftest.py").write_text(CONFTEST)
        (project / "app_tests").mkdir()
        (project / "app_tests" / "test_app.py").write_text("def test_app():\n    pass\n")
        for name, data in settings.items():
            (project / name).write_bytes(data)
        _inject(project, failure)
        odd_missing = base / ("nope" + odd_name.replace("/", ""))
        folder = {"file": project / "conftest.py", "missing": base / "nope", "odd-missing": odd_missing}.get(
            where, project
        )
        before = snapshot(base)
        argv = ["init", "--dir", str(folder), "--no-models"]
        argv += (["--tutor", tutor] if tutor is not None else []) + (["--force"] if force else [])
        code = main(argv)
        out, err = capsys.readouterr()
        event(f"exit {code}")
        assert code in (0, 4), f"exit {code}: {err}"
        assert not TRACEBACK.search(out + err) and SECRET not in out + err
        assert "\x1b" not in out + err, "a name's escape sequence reached the terminal raw"
        if code == 4:
            assert len(err.strip().splitlines()) == 1, err
            assert snapshot(base) == before, "exit 4 leaves the folder byte for byte as it was"
            return
        assert where in ("folder", "odd-folder")
        written = [p for p in project.rglob("*") if p.is_file()]
        assert not [p for p in written if p.name.endswith(".guardbench-init.tmp")], "a temporary file was left"
        assert not [p for p in written if SECRET.encode() in p.read_bytes()], "the planted key reached a file"
        source = find_settings(project)  # pytest's parsers: the settings read back
        assert source.settings is not None and "guardbench_data" in source.settings
        if tutor is not None and "already set up" not in out:
            assert source.settings["guardbench_tutor"] == tutor, "the tutor reads back as given"
        assert suite_cases(_collects(project)) > 0, "pytest collects the suite"


@fuzz(examples=150)
@given(tutor=tutors, settings=settings_files(), force=st.booleans())
def test_a_planned_settings_edit_reads_back_as_given_or_is_refused(tutor, settings, force):
    # The planner alone, without a collection: every settings text it plans reads back with pytest's
    # own parsers, holds the tutor exactly as given, and keeps every setting the project had.
    with tempfile.TemporaryDirectory() as root:
        folder, again = Path(root, "a"), Path(root, "b")
        folder.mkdir(), again.mkdir()
        for name, data in settings.items():
            (folder / name).write_bytes(data)
        stack = {"tutor": tutor} if tutor is not None else {}
        try:
            checked = checked_stack(stack, folder)
            source = find_settings(folder)
            plan = plan_starter(folder, source, StackNeeds(), force, checked)
        except UsageError as exc:
            assert SECRET not in str(exc) and "\n" not in str(exc)
            event("refused")
            return
        event("planned")
        for name, data in settings.items():
            (again / name).write_bytes(data)
        for starter in plan.files:
            (again / starter.path).parent.mkdir(parents=True, exist_ok=True)
            (again / starter.path).write_text(starter.text, encoding="utf-8")
            assert SECRET not in starter.text
        read_back = find_settings(again)
        assert read_back.path == source.path, "the settings stay in the file pytest reads"
        assert read_back.settings is not None
        for key, value in (source.settings or {}).items():
            if key != "testpaths" and not (force and key == "guardbench_tutor"):
                assert read_back.settings[key] == value, f"{key} changed"
        if tutor is not None and (force or "guardbench_tutor" not in (source.settings or {})):
            assert read_back.settings["guardbench_tutor"] == tutor
