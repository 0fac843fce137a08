"""Every error the package defines derives from GuardbenchError, through one of its kinds."""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil
from pathlib import Path

import pytest

import pytest_guardbench
from pytest_guardbench.errors import DataError, GuardbenchError, RunFolderError, UsageError
from pytest_guardbench.providers.base import ProviderError

KINDS = (UsageError, DataError, ProviderError, RunFolderError)


def defined_exceptions() -> list[type[BaseException]]:
    """Every exception class defined in a module of the package, found by importing them all, so a new
    one is checked without editing this test."""
    found: dict[str, type[BaseException]] = {}
    for module_info in pkgutil.walk_packages(pytest_guardbench.__path__, "pytest_guardbench."):
        module = importlib.import_module(module_info.name)
        for _, member in inspect.getmembers(module, inspect.isclass):
            if issubclass(member, BaseException) and member.__module__ == module.__name__:
                found[f"{member.__module__}.{member.__qualname__}"] = member
    return [found[name] for name in sorted(found)]


EXCEPTIONS = defined_exceptions()


def test_the_walk_finds_the_known_errors() -> None:
    names = {exc.__name__ for exc in EXCEPTIONS}
    assert {"ConfigError", "DataError", "ProviderError", "ReportWriteError", "Retryable"} <= names


@pytest.mark.parametrize("exc", EXCEPTIONS, ids=lambda exc: f"{exc.__module__}.{exc.__qualname__}")
def test_every_error_derives_from_guardbench_error(exc: type[BaseException]) -> None:
    assert issubclass(exc, GuardbenchError)
    assert exc.__doc__, f"{exc.__name__} needs a one-line docstring saying when it is raised"


@pytest.mark.parametrize("exc", EXCEPTIONS, ids=lambda exc: f"{exc.__module__}.{exc.__qualname__}")
def test_every_error_but_the_retry_signal_has_a_kind(exc: type[BaseException]) -> None:
    # Retryable is one failed attempt inside the retry loop; `except ProviderError` must not catch it.
    if exc.__name__ == "Retryable":
        assert not issubclass(exc, ProviderError)
    elif exc is not GuardbenchError:
        assert issubclass(exc, KINDS)


@pytest.mark.parametrize(
    ("module", "name", "builtin"),
    [
        ("cases.sources", "DataError", ValueError),
        ("cases.variants", "VariantError", ValueError),
        ("settings.options", "ConfigError", ValueError),
        ("scoring.policies", "PolicyError", ValueError),
        ("results.compare", "CompareError", ValueError),
        ("judges.labeller_agreement", "LabellingMismatch", ValueError),
        ("run.resume", "ResumeError", ValueError),
        ("run.folder", "ReportWriteError", OSError),
        ("providers.base", "ProviderError", RuntimeError),
    ],
)
def test_errors_stay_importable_where_they_were_and_keep_their_builtin_base(
    module: str, name: str, builtin: type[Exception]
) -> None:
    # Callers catch ValueError / OSError / RuntimeError around these; a new base must not hide them.
    exc = getattr(importlib.import_module(f"pytest_guardbench.{module}"), name)
    assert issubclass(exc, builtin)


def test_data_error_names_file_and_line() -> None:
    error = DataError("not valid JSON (Expecting value)", path=Path("packs") / "kids.jsonl", line=7)

    assert str(error) == f"{Path('packs') / 'kids.jsonl'}:7: not valid JSON (Expecting value)"
    assert (error.path, error.line, error.message) == (
        str(Path("packs") / "kids.jsonl"),
        7,
        "not valid JSON (Expecting value)",
    )


def test_data_error_without_a_line_names_the_file_and_a_bare_message_is_kept() -> None:
    assert str(DataError("the pack has no items", path="kids.json")) == "kids.json: the pack has no items"
    assert str(DataError("kids.json: the pack has no items")) == "kids.json: the pack has no items"


def test_data_error_survives_pickling_with_its_text() -> None:
    # xdist workers and process pools send exceptions between processes.
    error = pickle.loads(pickle.dumps(DataError("missing id", path="kids.jsonl", line=3)))
    assert str(error) == "kids.jsonl:3: missing id"


def test_usage_kinds_carry_the_usage_exit_status() -> None:
    assert UsageError.exit_status == pytest.ExitCode.USAGE_ERROR
    assert DataError.exit_status == pytest.ExitCode.USAGE_ERROR
    assert GuardbenchError.exit_status is None
