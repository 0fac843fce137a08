"""pytest-guardbench: stress-test a child-facing tutor chatbot and its guardrail, and gate CI on safety.

The names below are the public API (tests/unit/test_exported_members.py pins them): reading a finished
run in a notebook, the per-case records, the tutor interface, and the errors guardbench raises.
Importing the package stays cheap: no model library is loaded until a provider is built, and each
name below is imported when it is first read (an API call process imports the package and needs
none of them)."""

import importlib as _importlib
from typing import TYPE_CHECKING as _TYPE_CHECKING

if _TYPE_CHECKING:
    from pytest_guardbench.errors import DataError, GuardbenchError, RunFolderError, UsageError
    from pytest_guardbench.providers.base import ChatProvider, ProviderError
    from pytest_guardbench.records import CaseRecord, GuardDecision, JudgeVerdict
    from pytest_guardbench.document.summary import RunSummary
    from pytest_guardbench.results.frame import load_results
    from pytest_guardbench.document.read import load_run
    from pytest_guardbench.document.scorecards import Scorecard

__version__ = "0.1.0"

_WHERE = {
    "DataError": "pytest_guardbench.errors",
    "GuardbenchError": "pytest_guardbench.errors",
    "RunFolderError": "pytest_guardbench.errors",
    "UsageError": "pytest_guardbench.errors",
    "ChatProvider": "pytest_guardbench.providers.base",
    "ProviderError": "pytest_guardbench.providers.base",
    "CaseRecord": "pytest_guardbench.records",
    "GuardDecision": "pytest_guardbench.records",
    "JudgeVerdict": "pytest_guardbench.records",
    "RunSummary": "pytest_guardbench.document.summary",
    "load_results": "pytest_guardbench.results.frame",
    "load_run": "pytest_guardbench.document.read",
    "Scorecard": "pytest_guardbench.document.scorecards",
}


def __getattr__(name: str) -> object:
    if name not in _WHERE:
        raise AttributeError(f"module 'pytest_guardbench' has no attribute {name!r}")
    value = getattr(_importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})


__all__ = [
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
