"""The keys every process keeps its run objects under in `config.stash` and `item.stash`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # named in annotations only: importing the plugin imports none of them
    from pytest_guardbench.plugin.interrupts import InterruptHandler
    from pytest_guardbench.plugin.session import GuardbenchSession
    from pytest_guardbench.records import CaseRecord
    from pytest_guardbench.run.inputs import RunInputs
    from pytest_guardbench.run.process import ProcessState
    from pytest_guardbench.scoring.scorecard import Scored

INPUTS_KEY: pytest.StashKey[RunInputs] = pytest.StashKey()
SESSION_KEY: pytest.StashKey[GuardbenchSession] = pytest.StashKey()
PROCESS_KEY: pytest.StashKey[ProcessState] = pytest.StashKey()
RECORD_KEY: pytest.StashKey[CaseRecord] = pytest.StashKey()
SCORE_KEY: pytest.StashKey[Scored] = pytest.StashKey()
# Whether this process froze its long-lived objects for the garbage collector (`plugin.collector`).
FROZEN_KEY: pytest.StashKey[bool] = pytest.StashKey()
# The signal handlers the controller installed (Ctrl-C, SIGTERM), uninstalled at unconfigure.
INTERRUPTS_KEY: pytest.StashKey[InterruptHandler] = pytest.StashKey()
