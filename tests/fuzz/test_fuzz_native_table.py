"""The pytest settings a project holds, as `init`'s fuzz draws them (`strategies.settings_files`), with
guardbench keys in pytest 9's native `[tool.pytest]` table in TOML's own types (a float bar, an integer,
a boolean, an array of variants), escape sequences and planted keys: a pytest run collects, or stops
with exit 4 and one line naming the file or the key; never a traceback or an internal error, never a
planted key, nothing a terminal would obey."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import event, given

from tests.fuzz.conftest import check_outcome, fuzz
from tests.fuzz.strategies import settings_files

pytestmark = pytest.mark.usefixtures("planted_key")

CONFTEST = (
    "def pytest_guardbench_register_providers(registry):\n"
    "    registry.register('tutor-a', lambda options: None, 'A.')\n"
)
SUITE = "def test_case(guardbench_outcome):\n    guardbench_outcome.require_handled()\n"


def _collect(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
        cwd=folder,
        env={**env, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        errors="replace",
        timeout=300,
        check=False,
    )


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@fuzz(examples=12)
@given(settings=settings_files(native_values=True))
def test_a_native_pytest_table_collects_or_names_the_file_or_key(settings):
    with tempfile.TemporaryDirectory() as root:
        folder = Path(root)
        (folder / "conftest.py").write_text(CONFTEST)
        (folder / "test_guardbench.py").write_text(SUITE)
        for name, data in settings.items():
            (folder / name).write_bytes(data)
        # The shipped pack when the settings name no data, so that a run of good settings collects.
        named = any(b"guardbench_data" in data for data in settings.values())
        done = _collect(folder, *([] if named else ["--guardbench-data=child_safety_v1"]))
        event(f"exit {done.returncode}")
        if not all(_utf8(data) for name, data in settings.items() if name != ".gitignore"):
            # pytest reads its settings before any plugin loads, and stops on a file that is not UTF-8
            # with a traceback of its own (pytest 9.2): nothing a plugin can catch. `guardbench init`
            # names such a file itself (test_fuzz_init.py).
            assert done.returncode != 0
            return
        # 5: nothing collected (settings that name no data); 4: refused, one line.
        check_outcome(done.returncode, done.stdout, done.stderr)
        if done.returncode == 4:
            text = done.stdout + done.stderr
            errors = [line for line in text.splitlines() if line.startswith("ERROR:")]
            assert len(errors) <= 1, text
            said = errors[0] if errors else text
            assert any(name in said for name in [*settings, "guardbench"]), said
