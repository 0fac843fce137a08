"""The public API of `pytest_guardbench` is exactly the names below; changing it is a decision made here."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import types

import pytest

import pytest_guardbench

PUBLIC_NAMES = [
    "CaseRecord",
    "ChatProvider",
    "DataError",
    "GuardDecision",
    "GuardbenchError",
    "JudgeVerdict",
    "ProviderError",
    "RunFolderError",
    "RunSummary",
    "Scorecard",
    "UsageError",
    "__version__",
    "load_results",
    "load_run",
]
HEAVY_MODULES = ("torch", "transformers", "openai", "pandas", "pytest")


def test_all_is_the_pinned_list_and_sorted() -> None:
    assert pytest_guardbench.__all__ == PUBLIC_NAMES
    assert pytest_guardbench.__all__ == sorted(pytest_guardbench.__all__)


def test_every_exported_name_is_importable_and_documented() -> None:
    for name in pytest_guardbench.__all__:
        member = getattr(pytest_guardbench, name)
        if name != "__version__":
            assert member.__doc__, f"pytest_guardbench.{name} has no docstring"


def test_nothing_public_is_left_out_of_all() -> None:
    # Subpackages show up as attributes once imported; they are reached by their dotted path instead.
    public = [
        name
        for name, member in vars(pytest_guardbench).items()
        if not name.startswith("_") and not isinstance(member, types.ModuleType)
    ]
    assert sorted(public) == [name for name in PUBLIC_NAMES if not name.startswith("_")]


def test_star_import_gives_the_public_names() -> None:
    namespace: dict[str, object] = {}
    exec("from pytest_guardbench import *", namespace)
    assert sorted(name for name in namespace if name != "__builtins__") == sorted(PUBLIC_NAMES)


def test_importing_the_package_loads_no_model_library() -> None:
    # A fresh interpreter: this one already has pytest and whatever other tests imported.
    code = f"import json, sys, pytest_guardbench; print(json.dumps([m for m in {HEAVY_MODULES!r} if m in sys.modules]))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(loaded) == []


# The subpackages with a public face: what a plugin, a conftest or a notebook imports from them.
SUBPACKAGE_NAMES = {
    "pytest_guardbench.cases": ["ConversationVariant", "Mutator", "MutatorRegistry"],
    "pytest_guardbench.judges": ["Judge", "JudgeInput", "JudgeRegistry"],
    "pytest_guardbench.results": ["RunSummary", "iter_records", "load_records", "load_results", "load_run"],
    "pytest_guardbench.runfolder": ["RunFacts", "RunFinish"],
    "pytest_guardbench.scoring": ["POLICIES", "Scorecard", "Scored", "ScoringPolicy", "policy_named", "score_record"],
}


@pytest.mark.parametrize("package", sorted(SUBPACKAGE_NAMES))
def test_each_public_subpackage_exports_its_pinned_names(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__ == SUBPACKAGE_NAMES[package], f"{package}.__all__ changed: pin the new list here"
    for name in module.__all__:
        member = getattr(module, name)
        assert member.__doc__ or not callable(member), f"{package}.{name} has no docstring"
