"""The public fixtures of a generated case (`guardbench_case`, `guardbench_record`, ...). A case's
record is scored here, once; the score travels with the record to the controller. Loaded by the
entry-point module through its `pytest_plugins`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from pytest_guardbench.plugin.keys import INPUTS_KEY, PROCESS_KEY, RECORD_KEY, SCORE_KEY, SESSION_KEY

if TYPE_CHECKING:
    from pytest_guardbench.plugin.outcome import GuardbenchOutcome
    from pytest_guardbench.plugin.worker import CaseSlot
    from pytest_guardbench.records import Case, CaseRecord, GuardDecision, JudgeVerdict, TutorReply

# The fixtures' bodies import what they use: pytest loads this module with the plugin, in every
# pytest run of an environment where guardbench is installed, and only a run with cases uses them.


@pytest.fixture
def _guardbench_slot(request: pytest.FixtureRequest) -> CaseSlot:
    from pytest_guardbench.plugin.worker import CaseSlot, past_deadline

    late = past_deadline(request.config.stash[PROCESS_KEY], request.config.stash[INPUTS_KEY].settings.max_duration)
    if late:
        pytest.skip(late)  # skipped, not failed: no record, so the case counts as not run and the run as incomplete
    return CaseSlot(request.param, request.node, request.config)


@pytest.fixture
def guardbench_case(_guardbench_slot: CaseSlot) -> Case:
    """The prompt-variant sample this test runs (set by parametrisation)."""
    return _guardbench_slot.case


@pytest.fixture
def guardbench_record(_guardbench_slot: CaseSlot) -> CaseRecord:
    """The full pipeline record of this case: guard decision, final response, judge verdict."""
    from pytest_guardbench.plugin.outcome import junit_properties
    from pytest_guardbench.plugin.worker import await_record
    from pytest_guardbench.scoring.scorecard import score_record

    slot = _guardbench_slot
    inputs = slot.config.stash[INPUTS_KEY]
    run_session = slot.config.stash.get(SESSION_KEY, None)
    progress = run_session.progress if run_session is not None else None
    record = await_record(slot, slot.config.stash[PROCESS_KEY], inputs.settings.progress, progress)
    scored = score_record(record, inputs.policy)
    slot.item.stash[RECORD_KEY] = record
    slot.item.stash[SCORE_KEY] = scored
    slot.item.user_properties.extend(junit_properties(record, scored))
    return record


@pytest.fixture
def guardbench_guard_decision(guardbench_record: CaseRecord) -> GuardDecision | None:
    """The parsed guard decision, or None when the run has no guard."""
    return guardbench_record.guard


@pytest.fixture
def guardbench_tutor_response(guardbench_record: CaseRecord) -> TutorReply | None:
    """The final response: the tutor's answer, or the refusal text when the guard blocked."""
    return guardbench_record.response


@pytest.fixture
def guardbench_verdict(guardbench_record: CaseRecord) -> JudgeVerdict | None:
    """The judge's verdict on the final response."""
    return guardbench_record.judge


@pytest.fixture
def guardbench_outcome(_guardbench_slot: CaseSlot, guardbench_record: CaseRecord) -> GuardbenchOutcome:
    """The case scored against its label (TP/FP/TN/FN or why it is unscored)."""
    from pytest_guardbench.plugin.outcome import GuardbenchOutcome

    inputs = _guardbench_slot.config.stash[INPUTS_KEY]
    return GuardbenchOutcome.of(guardbench_record, _guardbench_slot.item.stash[SCORE_KEY], inputs.settings.mode)
