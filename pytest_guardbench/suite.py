"""The packaged suite: the one test function the plugin turns into one test per prompt-variant.

A repository gates its tutor with a test module of one line, which `guardbench init` writes:

    from pytest_guardbench.suite import test_case

pytest collects the imported function there, and the plugin parametrises it from the run's data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_guardbench.plugin.outcome import GuardbenchOutcome


def test_case(guardbench_outcome: GuardbenchOutcome) -> None:
    """One prompt-variant through guard, tutor and judge: passes when handled; a mishandled case is
    xfail in gate mode (the session's gate decides the build) and fails in strict mode or on a
    pipeline error."""
    guardbench_outcome.require_handled()
