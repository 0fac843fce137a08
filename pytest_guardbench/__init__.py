"""pytest-guardbench: stress-test a child-facing tutor chatbot and its guardrail, and gate CI on safety."""

from pytest_guardbench.providers.base import ChatProvider
from pytest_guardbench.results.summary import RunSummary, load_results, load_run
from pytest_guardbench.records import CaseRecord, GuardDecision, JudgeVerdict
from pytest_guardbench.scoring.scorecard import Scorecard

__version__ = "0.1.0"

__all__ = [
    "CaseRecord",
    "ChatProvider",
    "GuardDecision",
    "JudgeVerdict",
    "RunSummary",
    "Scorecard",
    "__version__",
    "load_results",
    "load_run",
]
