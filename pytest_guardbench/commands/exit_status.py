"""Exit statuses: one table for `pytest` runs and `guardbench` commands alike (printed by
`guardbench --help` and rendered in the docs), and the status of a command that writes a run folder."""

from __future__ import annotations

from pytest_guardbench.results.summary import RunSummary

OK = 0
FAILED = 1
INTERRUPTED = 2
INTERNAL_ERROR = 3
USAGE_ERROR = 4
NO_TESTS = 5
INCONCLUSIVE = 6

EXIT_STATUSES: tuple[tuple[int, str], ...] = (
    (OK, "gate passed (mishandled cases show as xfail); a command did what it was asked"),
    (FAILED, "gate failed, a pipeline error, a failing test, or a command whose calls failed"),
    (INTERRUPTED, "interrupted (Ctrl-C or SIGTERM): reports written and marked incomplete; a second signal exits at once"),
    (INTERNAL_ERROR, "internal error (a bug: please report it)"),
    (USAGE_ERROR, "usage error: a bad option, argument, ini key or value, pyproject table or input file; a check "
                  "that matches no case; a model failing the preflight; a run folder that cannot be written or is in use; "
                  "runs that cannot be merged or compared (another policy, stack or judge id)"),
    (NO_TESTS, "no tests were collected or selected (pytest's own status)"),
    (INCONCLUSIVE, "gate inconclusive (Wilson mode: nothing failed, but a check could not be decided)"),
)  # fmt: skip


def exit_status_table() -> str:
    return "\n".join(f"  {code}  {meaning}" for code, meaning in EXIT_STATUSES)


def gate_exit_code(summary: RunSummary) -> int:
    """The exit status a pytest run would have had: 0 passed, 1 failed, 6 inconclusive."""
    return {"passed": OK, "failed": FAILED}.get(summary.gate.verdict, INCONCLUSIVE)
