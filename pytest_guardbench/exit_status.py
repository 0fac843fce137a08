"""Every exit status guardbench ends with, for `pytest` runs and `guardbench` commands alike: the one
table that `guardbench --help` prints and the docs render. Free of pytest: 0-5 are pytest's own values."""

from __future__ import annotations

from enum import IntEnum

__all__ = ["EXIT_STATUSES", "ExitStatus", "exit_status_table"]


class ExitStatus(IntEnum):
    """The documented exit statuses; 0-5 match `pytest.ExitCode`."""

    OK = 0
    FAILED = 1
    INTERRUPTED = 2
    INTERNAL_ERROR = 3
    USAGE_ERROR = 4
    NO_TESTS = 5
    # Beyond pytest's range, so CI tells "too few cases to decide" apart from a failed gate (1).
    INCONCLUSIVE = 6


EXIT_STATUSES: tuple[tuple[ExitStatus, str], ...] = (
    (ExitStatus.OK, "gate passed (mishandled cases show as xfail); a command did what it was asked"),
    (ExitStatus.FAILED, "gate failed, a pipeline error, a failing test, or a command whose calls failed"),
    (
        ExitStatus.INTERRUPTED,
        "interrupted (Ctrl-C or SIGTERM): reports written and marked incomplete (finished as they stand when "
        "the tests were over); a second signal exits at once",
    ),
    (ExitStatus.INTERNAL_ERROR, "internal error (a bug: please report it)"),
    (
        ExitStatus.USAGE_ERROR,
        "usage error: a bad option, argument, ini key or value, pyproject table or input file; a check "
        "that matches no case; a model failing the preflight; a run folder that cannot be written or is in use; "
        "runs that cannot be merged or compared (another policy, stack or judge id, or audit-corrected "
        "numbers beside judge-only ones)",
    ),
    (ExitStatus.NO_TESTS, "no tests were collected or selected (pytest's own status)"),
    (
        ExitStatus.INCONCLUSIVE,
        "gate inconclusive: nothing failed, but a check could not be decided. Wilson mode: a check's whole 95% "
        "Wilson interval straddles its bar (too few cases to decide: run more cases). Labels mode "
        "(--guardbench-labels, guardbench correct): a corrected 95% interval straddles its bar, or the labels cannot "
        "estimate a rate (too few of them match this run's replies): label more of the run's replies "
        "(guardbench audit RUN_DIR --plan says how many)",
    ),
)


def exit_status_table() -> str:
    return "\n".join(f"  {int(code)}  {meaning}" for code, meaning in EXIT_STATUSES)
