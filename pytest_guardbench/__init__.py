"""pytest-guardbench: stress-test a child-facing tutor chatbot and its guardrail, and gate CI on safety.

The names below are the public API (tests/unit/test_exported_members.py pins them): reading a finished
run in a notebook, the per-case records, the tutor interface, and the errors guardbench raises.
Importing the package stays cheap: no model library is loaded until a provider is built."""

from pytest_guardbench.errors import DataError, GuardbenchError, RunFolderError, UsageError
from pytest_guardbench.providers.base import ChatProvider, ProviderError
from pytest_guardbench.records import CaseRecord, GuardDecision, JudgeVerdict
from pytest_guardbench.results.summary import RunSummary, load_results, load_run
from pytest_guardbench.scoring.scorecard import Scorecard

__version__ = "0.1.0"

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
