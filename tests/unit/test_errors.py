"""Every error the package defines derives from GuardbenchError, through one of its kinds."""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import pickle
import pkgutil
from pathlib import Path

import pytest

import pytest_guardbench
from pytest_guardbench.errors import DataError, GuardbenchError, InternalError, RunFolderError, UsageError
from pytest_guardbench.providers.base import ProviderError

KINDS = (UsageError, DataError, ProviderError, RunFolderError, InternalError)


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
        ("audit.agreement", "LabellingMismatch", ValueError),
        ("runfolder.resume", "ResumeError", ValueError),
        ("runfolder.folder", "ReportWriteError", OSError),
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


# Builtin exception classes a module may not raise: every builtin error, and Exception and BaseException
# themselves. SystemExit, KeyboardInterrupt and GeneratorExit are left out: they are how a command exits
# and how an interrupt travels, not errors a caller could handle by cause.
BUILTIN_ERRORS = frozenset(
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and (issubclass(value, Exception) or value is BaseException)
)


def _base_name(node: ast.expr) -> str | None:
    """The name a base class, decorator or raised class is written with: `Protocol[T]`, `abc.ABC`, `X()`."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript | ast.Call):
        return _base_name(node.value if isinstance(node, ast.Subscript) else node.func)
    return None


class _BuiltinRaises(ast.NodeVisitor):
    """Collects the line of every `raise X` / `raise X(...)` whose X is a builtin error, except
    `raise NotImplementedError` in an abstract method or a method of a Protocol or ABC, and
    `raise AttributeError` in a module's `__getattr__` (the protocol of a module attribute: `hasattr`
    and `from … import` need exactly that error)."""

    def __init__(self, own_names: set[str]) -> None:
        self.own_names = own_names  # a module's own class or import that shadows a builtin's name
        self.lines: list[int] = []
        # One entry per enclosing class (True: a Protocol or ABC) or function (True: abstract).
        self.scopes: list[tuple[str, bool]] = []
        self.function_names: list[str] = []

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        interface = any(_base_name(base) in ("Protocol", "ABC") for base in node.bases) or any(
            keyword.arg == "metaclass" and _base_name(keyword.value) == "ABCMeta" for keyword in node.keywords
        )
        self.scopes.append(("class", interface))
        self.generic_visit(node)
        self.scopes.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        abstract = any(_base_name(decorator) == "abstractmethod" for decorator in node.decorator_list)
        in_interface = bool(self.scopes) and self.scopes[-1] == ("class", True)
        self.scopes.append(("function", abstract or in_interface))
        self.function_names.append(node.name)
        self.generic_visit(node)
        self.function_names.pop()
        self.scopes.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Raise(self, node: ast.Raise) -> None:
        raised = None if node.exc is None else node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if isinstance(raised, ast.Name) and raised.id in BUILTIN_ERRORS and raised.id not in self.own_names:
            functions = [allowed for kind, allowed in self.scopes if kind == "function"]
            module_getattr = raised.id == "AttributeError" and self.function_names == ["__getattr__"]
            if not (raised.id == "NotImplementedError" and functions and functions[-1]) and not module_getattr:
                self.lines.append(node.lineno)
        self.generic_visit(node)


def builtin_raises() -> list[str]:
    """`path:line: raise Name` for every builtin error raised in a module of the package."""
    package = Path(pytest_guardbench.__file__).parent
    found = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        own_names = {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)} | {
            alias.asname or alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in node.names
        }
        visitor = _BuiltinRaises(own_names)
        visitor.visit(tree)
        lines = path.read_text(encoding="utf-8").splitlines()
        where = path.relative_to(package.parent).as_posix()
        found += [f"{where}:{line}: {lines[line - 1].strip()}" for line in visitor.lines]
    return found


def test_no_module_raises_a_builtin_error() -> None:
    """Every error the package raises on purpose is a GuardbenchError kind, so a caller can catch it by
    cause and the exit status follows from it; a bare `raise` re-raises, and an abstract method may
    raise NotImplementedError."""
    found = builtin_raises()
    assert not found, "raise a GuardbenchError kind (errors.py) instead of a builtin:\n" + "\n".join(found)


def test_the_raise_check_sees_what_it_must() -> None:
    source = """
import abc
from typing import Protocol
from concurrent.futures import TimeoutError

class Reader(Protocol):
    def read(self) -> str:
        raise NotImplementedError

class Base(abc.ABC):
    @abc.abstractmethod
    def run(self) -> None:
        raise NotImplementedError()

def plain():
    try:
        pass
    except OSError:
        raise
    raise TimeoutError("shadowed by the import above: not the builtin")

def flagged():
    raise NotImplementedError
    raise ValueError("bad") from None
    raise KeyError
    raise SystemExit(2)
"""
    tree = ast.parse(source)
    visitor = _BuiltinRaises({"Protocol", "abc", "TimeoutError"})
    visitor.visit(tree)
    assert [source.splitlines()[line - 1].strip() for line in visitor.lines] == [
        "raise NotImplementedError",
        'raise ValueError("bad") from None',
        "raise KeyError",
    ]
