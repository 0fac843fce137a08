"""Every name a benchmark script under bench/ imports from the package exists: a module split or a
rename must not leave a benchmark that fails at its first line (bench_engine_api.py did once)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
SCRIPTS = sorted(BENCH.glob("*.py"))


def _package_imports(script: Path) -> list[tuple[str, str]]:
    found = []
    for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pytest_guardbench"):
            found.extend((node.module, alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend((alias.name, "") for alias in node.names if alias.name.startswith("pytest_guardbench"))
    return found


def test_there_are_benchmarks_that_import_the_package():
    assert len(SCRIPTS) >= 10 and sum(bool(_package_imports(s)) for s in SCRIPTS) >= 8


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_a_benchmarks_package_imports_resolve(script):
    for module_name, name in _package_imports(script):
        module = importlib.import_module(module_name)
        if name:
            assert hasattr(module, name) or importlib.util.find_spec(f"{module_name}.{name}") is not None, (
                f"{script.name}: `from {module_name} import {name}` names nothing"
            )
