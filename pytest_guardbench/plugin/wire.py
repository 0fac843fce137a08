"""What crosses from a test process (an xdist worker, or the only process) to the controller: the
record and its score on each `TestReport`, and the worker's small output at its end."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_guardbench.records import CaseRecord
    from pytest_guardbench.scoring.scorecard import Scored

# Report attributes: the case's record (a JSON dict) and its score, made once where the test ran.
# Only an xdist worker's reports carry them; the only process hands its records to its session as
# they are (`GuardbenchSession.hand_over`), without the round trip through JSON.
RECORD_ATTR = "guardbench_record"
SCORE_ATTR = "guardbench_score"
# The hidden fixture that every case fixture depends on and that parametrisation targets.
SLOT_FIXTURE = "_guardbench_slot"
WORKER_OUTPUT_KEY = "guardbench"


def case_id_of(nodeid: str) -> str | None:
    """The case id in a generated test's node id (its parameter id), or None for any other test."""
    if not nodeid.endswith("]") or "[" not in nodeid:
        return None
    return nodeid[nodeid.rindex("[") + 1 : -1]


class Inbox:
    """Where the controller takes each report's record from: handed over in this process (no xdist),
    or on the report from a worker, as JSON validated here. A worker's record that does not validate
    is a bug; it is kept as an internal error naming the test, never dropped silently."""

    def __init__(self) -> None:
        # Records this process made itself, by node id, from the report hook until the report is logged.
        self._handed: dict[str, tuple[CaseRecord, Scored]] = {}
        self.internal_errors: list[str] = []

    def hand_over(self, nodeid: str, record: CaseRecord, scored: Scored) -> None:
        self._handed[nodeid] = (record, scored)

    def take(self, report: pytest.TestReport) -> tuple[CaseRecord, Scored | None] | None:
        """The record `report` brings, with its score when it came with one; None when it brings none."""
        handed = self._handed.pop(report.nodeid, None)
        if handed is not None:
            return handed
        payload = getattr(report, RECORD_ATTR, None)
        if payload is None:
            return None
        # Here, not at the top: the plugin's import stays free of the models (hooks.py imports this module).
        from pydantic import ValidationError

        from pytest_guardbench.records import CaseRecord
        from pytest_guardbench.scoring.scorecard import Scored

        try:
            record = CaseRecord.model_validate(payload)
        except ValidationError as exc:
            self.internal_errors.append(f"{report.nodeid}: record failed validation: {exc.errors()[0]['msg']}")
            return None
        score = getattr(report, SCORE_ATTR, None)
        return record, Scored(*score) if score is not None else None
