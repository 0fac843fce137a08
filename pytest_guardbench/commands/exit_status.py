"""The exit status of a command that writes a run folder, read from its gate. The table of every status
lives in `pytest_guardbench.exit_status`."""

from __future__ import annotations

from pytest_guardbench.exit_status import EXIT_STATUSES, ExitStatus, exit_status_table
from pytest_guardbench.document.summary import RunSummary

OK = ExitStatus.OK
FAILED = ExitStatus.FAILED
INTERRUPTED = ExitStatus.INTERRUPTED
INTERNAL_ERROR = ExitStatus.INTERNAL_ERROR
USAGE_ERROR = ExitStatus.USAGE_ERROR
NO_TESTS = ExitStatus.NO_TESTS
INCONCLUSIVE = ExitStatus.INCONCLUSIVE

__all__ = ["EXIT_STATUSES", "exit_status_table", "gate_exit_code"]


def gate_exit_code(summary: RunSummary) -> int:
    """The exit status a pytest run would have had: 0 passed, 1 failed, 6 inconclusive."""
    return {"passed": OK, "failed": FAILED}.get(summary.gate.verdict, INCONCLUSIVE)
