"""`guardbench --version` prints the package's version and exits 0, whatever subcommand would follow."""

from __future__ import annotations

import subprocess
import sys

import pytest

import pytest_guardbench
from pytest_guardbench.commands.main import main


def test_version_is_the_packages(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"pytest-guardbench {pytest_guardbench.__version__}\n"


def test_the_console_script_prints_it():
    done = subprocess.run(
        [sys.executable, "-m", "pytest_guardbench.commands.main", "--version"], capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout.strip() == f"pytest-guardbench {pytest_guardbench.__version__}"
