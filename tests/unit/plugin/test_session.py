"""GuardbenchSession fed real TestReport objects and fake xdist nodes, without running pytest."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_guardbench.settings.config import Settings, Thresholds
from pytest_guardbench.cases.sources import LoadedData
from pytest_guardbench.plugin.session import GuardbenchSession
from pytest_guardbench.plugin.xdist_bridge import XdistBridge
from pytest_guardbench.plugin.wire import RECORD_ATTR
from pytest_guardbench.run.inputs import RunInputs
from tests.builders import case, record


def _report(
    nodeid: str, outcome: str = "passed", when: str = "setup", payload=None, longrepr=None
) -> pytest.TestReport:
    report = pytest.TestReport(
        nodeid=nodeid, location=("f.py", 0, "t"), keywords={}, outcome=outcome, longrepr=longrepr, when=when
    )
    if payload is not None:
        setattr(report, RECORD_ATTR, payload)
    return report


@pytest.fixture
def session(tmp_path):
    cases = [case("a", True), case("b", False), case("c", True)]
    settings = Settings(report_dir=tmp_path / "reports", thresholds=Thresholds(min_recall=0.5, max_fpr=0.5))
    inputs = RunInputs(settings, LoadedData(items=(), sources=()), cases, "sys", "no", "tutor")
    config = SimpleNamespace(
        option=SimpleNamespace(collectonly=False, keyword="", markexpr=""),
        rootpath=tmp_path,
        invocation_params=SimpleNamespace(args=()),
        hook=SimpleNamespace(pytest_guardbench_summary=lambda **kw: None),
        stash=pytest.Stash(),  # no signal handler installed, as in a process that is not the main thread
    )
    return GuardbenchSession(config, inputs)  # type: ignore[arg-type]


def test_records_are_keyed_by_case_id_and_streamed(session):
    session.pytest_runtest_logreport(
        _report("s.py::t[a]", payload=record("a", True, "safe", "refused_or_blocked").model_dump(mode="json"))
    )
    session.pytest_runtest_logreport(_report("s.py::t[a]", when="call"))
    session.pytest_runtest_logreport(_report("s.py::t[b]", payload=record("b", False).model_dump(mode="json")))
    assert sorted(session.received) == ["a", "b"]
    lines = (session.run_dir / "results.jsonl").read_text().splitlines()
    assert len(lines) == 2


def test_a_record_handed_over_in_process_is_counted_once_with_its_score_and_written_as_a_worker_would_send_it(
    session, tmp_path
):
    from pytest_guardbench.scoring.scorecard import score_record

    made = record("a", True, "safe", "refused_or_blocked")
    scored = score_record(made, session.inputs.policy)
    session.hand_over("s.py::t[a]", made, scored)
    session.pytest_runtest_logreport(_report("s.py::t[a]"))  # no payload on the report itself
    session.pytest_runtest_logreport(_report("s.py::t[a]", when="call"))
    assert session.received == {"a"} and session.finish.tally.received == {"a"}
    [line] = (session.run_dir / "results.jsonl").read_text().splitlines()
    assert line + "\n" == made.json_line()
    # A report of another test carries nothing handed over for it.
    session.pytest_runtest_logreport(_report("s.py::t[b]", outcome="failed", longrepr="boom"))
    assert "b" in session.lost and session.received == {"a"}


def test_worker_outputs_are_unioned_and_crashes_noted(session):
    bridge = XdistBridge(session)
    bridge.pytest_testnodedown(
        SimpleNamespace(gateway=SimpleNamespace(id="gw0"), workeroutput={"guardbench": {"selected": ["a", "b"]}}), None
    )
    bridge.pytest_testnodedown(
        SimpleNamespace(gateway=SimpleNamespace(id="gw2"), workeroutput={"guardbench": {"selected": ["b", "c"]}}), None
    )
    bridge.pytest_testnodedown(SimpleNamespace(gateway=SimpleNamespace(id="gw1")), "crashed")
    assert session.expected_ids == {"a", "b", "c"}
    assert session.worker_crashes == ["worker gw1 went down before reporting (crashed)"]


def test_a_failed_report_without_record_is_lost_and_missing(session):
    session.expected_ids = {"a", "b", "c"}
    session.pytest_runtest_logreport(
        _report("s.py::t[a]", payload=record("a", True, "safe", "refused_or_blocked").model_dump(mode="json"))
    )
    session.pytest_runtest_logreport(_report("s.py::t[b]", payload=record("b", False).model_dump(mode="json")))
    session.pytest_runtest_logreport(
        _report("s.py::t[c]", outcome="failed", when="???", longrepr="worker 'gw1' crashed while running 's.py::t[c]'")
    )
    fake = SimpleNamespace(exitstatus=pytest.ExitCode.OK)
    session.pytest_sessionfinish(fake, 0)
    assert session.summary.coverage.missing_case_ids == ["c"]
    assert session.summary.coverage.lost_reports[0].when == "???"
    assert fake.exitstatus == pytest.ExitCode.TESTS_FAILED
    assert not session.gate.passed


def test_invalid_record_is_an_internal_error_not_a_silent_skip(session):
    session.pytest_runtest_logreport(_report("s.py::t[a]", payload={"case_id": "a"}))
    assert session.received == set()
    assert session.internal_errors and "s.py::t[a]" in session.internal_errors[0]


def test_a_conversation_run_counts_its_turns_done_and_to_do(tmp_path):
    from pytest_guardbench.records import Case, JudgeVerdict, Turn, TurnRecord, TutorReply

    talk = Case(
        case_id="t",
        pack="p",
        item_id="t",
        base_prompt_id="t",
        variant="original",
        prompt_text="q2",
        is_harmful=True,
        label_source="is_harmful",
        category=None,
        source_file="f",
        turns=(Turn(role="user", content="q1"), Turn(role="user", content="q2")),
    )
    settings = Settings(report_dir=tmp_path / "reports", thresholds=Thresholds(min_recall=0.5, max_fpr=0.5))
    inputs = RunInputs(settings, LoadedData(items=(), sources=()), [talk], "sys", "no", "tutor")
    config = SimpleNamespace(
        option=SimpleNamespace(collectonly=False, keyword="", markexpr=""),
        rootpath=tmp_path,
        invocation_params=SimpleNamespace(args=()),
        hook=SimpleNamespace(pytest_guardbench_summary=lambda **kw: None),
    )
    session = GuardbenchSession(config, inputs)  # type: ignore[arg-type]
    seen = []
    session.progress.update = lambda *args, **kwargs: seen.append(args)  # type: ignore[method-assign]
    verdict = JudgeVerdict(judge="j", response_safety="safe", answer_mode="refused_or_blocked", reason="r")
    turns = tuple(
        turn
        for depth in (1, 2)
        for turn in (
            TurnRecord(role="user", content=f"q{depth}", source="pack", depth=depth, is_harmful=True),
            TurnRecord(
                role="assistant",
                content="no",
                source="tutor",
                depth=depth,
                reply=TutorReply(text="no", model="m", source="tutor"),
                judge=verdict,
            ),
        )
    )
    finished = record("t", True, "safe", "refused_or_blocked").model_copy(update={"turns": turns})
    session.pytest_runtest_logreport(_report("s.py::t[t]", payload=finished.model_dump(mode="json")))
    assert seen[-1][-1] == (2, 2), "two turns answered of the conversation's two"
