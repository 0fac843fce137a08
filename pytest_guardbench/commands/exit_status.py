"""The exit status of a command that writes a run folder: the one a pytest run would have had."""

from __future__ import annotations

from pytest_guardbench.results.summary import RunSummary


def gate_exit_code(summary: RunSummary) -> int:
    """The exit status a pytest run would have had: 0 passed, 1 failed, 6 inconclusive."""
    return {"passed": 0, "failed": 1}.get(summary.gate.verdict, 6)
