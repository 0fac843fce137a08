"""The keys every process keeps its run objects under in `config.stash` and `item.stash`."""

from __future__ import annotations

import pytest

from pytest_guardbench.plugin.session import GuardbenchSession
from pytest_guardbench.run.inputs import RunInputs
from pytest_guardbench.records import CaseRecord
from pytest_guardbench.run.process import ProcessState
from pytest_guardbench.scoring.scorecard import Scored

INPUTS_KEY = pytest.StashKey[RunInputs]()
SESSION_KEY = pytest.StashKey[GuardbenchSession]()
PROCESS_KEY = pytest.StashKey[ProcessState]()
RECORD_KEY = pytest.StashKey[CaseRecord]()
SCORE_KEY = pytest.StashKey[Scored]()
