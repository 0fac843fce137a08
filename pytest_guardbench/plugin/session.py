"""Controller-side state of a run: gathers one record (and its score) per case from every process and
hands it to the run folder (`runfolder.live.LiveRunFolder`, through its one finish), then sets the
exit status and prints the result. What the run's facts are (warnings, why it is incomplete, the
checks it adds) is decided in `runfolder.facts`; the session only observes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from pytest_guardbench.audit.labels import RunLabels
from pytest_guardbench.cases.sources import manifest
from pytest_guardbench.document.execution import Execution
from pytest_guardbench.document.gate import GateResult
from pytest_guardbench.document.metrics import LostReport
from pytest_guardbench.document.summary import RunSummary
from pytest_guardbench.exit_status import ExitStatus
from pytest_guardbench.plugin.console import write_result
from pytest_guardbench.plugin.gate_case import gate_nodeid, gate_reports, gate_teststatus
from pytest_guardbench.plugin.keys import INTERRUPTS_KEY
from pytest_guardbench.plugin.progress import Progress, RunCounts
from pytest_guardbench.plugin.wire import RECORD_ATTR, SLOT_FIXTURE, WORKER_OUTPUT_KEY, Inbox, case_id_of
from pytest_guardbench.plugin.write_ahead import WriteAhead
from pytest_guardbench.records import CaseRecord
from pytest_guardbench.results.github_summary import append_step_summary
from pytest_guardbench.run.inputs import RunInputs
from pytest_guardbench.run.judge_quality import RunJudgeQuality, run_judge_quality
from pytest_guardbench.run.preflight import PreflightInBackground
from pytest_guardbench.run.process import ProcessState
from pytest_guardbench.runfolder import folder as run_folder
from pytest_guardbench.runfolder import meta as run_meta
from pytest_guardbench.runfolder.facts import Observed, run_facts, write_failure
from pytest_guardbench.runfolder.finish import RunFinish
from pytest_guardbench.runfolder.live import LiveRunFolder
from pytest_guardbench.scoring.scorecard import Scored


class GuardbenchSession:
    """Registered on the controller (or the only process). Never raises from a reporting hook."""

    def __init__(
        self,
        config: pytest.Config,
        inputs: RunInputs,
        labels: RunLabels | None = None,
        preflight: PreflightInBackground | None = None,
    ) -> None:
        self.config = config
        self.preflight = preflight  # still asking the models while xdist starts its workers
        self.inputs = inputs
        self.expected_ids: set[str] = set()
        self.suite_path: str | None = None  # the file of the first case, where the gate case is filed
        self._reporting_gate = False
        self.judge_quality: RunJudgeQuality | None = None
        self.abandoned = False  # the stack could not be built: no case ran and nothing is written
        self.lost: dict[str, LostReport] = {}
        self.worker_crashes: list[str] = []
        # The first reason the run folder could not be written (a full disk, a folder removed): not a
        # bug, so not an internal error. One line naming the path; mid-run the run stops as failed (1),
        # and a finished run whose report cannot be written exits 4.
        self.write_problem: str | None = None
        self.started = run_folder.utc_now()
        self._started_clock = time.perf_counter()
        self._meta = run_meta.MetaOnce(inputs, Path(config.rootpath), config.invocation_params.args)
        self.folder = LiveRunFolder(inputs, labels, self.started, self._meta)
        self.summary: RunSummary | None = None
        self.execution: list[Execution] = []  # each worker's engine, cache and call counts
        self.process: ProcessState | None = None  # this process's models and engine, for its counts and the judge check
        self.progress = Progress(config, inputs.settings.progress)
        self.counts = RunCounts(self.progress, inputs.cases_by_id)
        self._pytest_session: pytest.Session | None = None
        self.inbox = Inbox()
        self.ahead = WriteAhead()

    @property
    def internal_errors(self) -> list[str]:
        """Broken promises met while gathering records (a worker's record that does not validate)."""
        return self.inbox.internal_errors

    # -- what the run folder holds ----------------------------------------------------------

    @property
    def run_dir(self) -> Path | None:
        return self.folder.run_dir

    @property
    def finish(self) -> RunFinish | None:
        return self.folder.finish

    @property
    def received(self) -> set[str]:
        """The case ids that reported a record."""
        return self.folder.received

    def abandon(self) -> None:
        """The stack could not be built: no case ran, so the finish writes no run folder."""
        self.abandoned = True

    def release(self) -> None:
        """Let the next process have the run folder (after the finish, or when the run is abandoned)."""
        self.folder.release()

    # -- collection and workers -------------------------------------------------------------

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.ahead.collected(session.items)
        for item in session.items:
            case_id = case_id_of(item.nodeid)
            if case_id in self.inputs.cases_by_id and SLOT_FIXTURE in getattr(item, "fixturenames", ()):
                self.expected_ids.add(case_id)
                self.suite_path = self.suite_path or item.nodeid.split("::")[0]

    def merge_worker(self, worker_id: str, output: dict[str, Any] | None, error: object) -> None:
        if output is None or error is not None:
            self.worker_crashes.append(f"worker {worker_id} went down before reporting ({error or 'no output'})")
            return
        payload = output.get(WORKER_OUTPUT_KEY)
        if payload:
            self.expected_ids.update(payload.get("selected", []))
            if payload.get("execution"):
                self.execution.append(Execution.model_validate(payload["execution"]))

    # -- records ----------------------------------------------------------------------------

    def hand_over(self, nodeid: str, record: CaseRecord, scored: Scored) -> None:
        """A record made in this process (no xdist), for the report of `nodeid` about to be logged."""
        self.inbox.hand_over(nodeid, record, scored)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        brought = self.inbox.take(report)
        case_id = case_id_of(report.nodeid)
        if brought is not None:
            record, scored = brought
            self.lost.pop(record.case_id, None)
            try:
                finish = self.folder.opened()
                finish.add(record, scored)
                engine = self.process.engine if self.process is not None else None
                finish.write_ahead(self.ahead.finished_after(report.nodeid, engine))
                finish.flush()  # before this report is logged: a case shown as finished is on disk
            except run_folder.ReportWriteError as exc:
                self._stop_run(exc.strerror or str(exc))
            except OSError as exc:  # the run folder itself could not be made, locked or described
                self._stop_run(self._write_failure(exc))
            self._progress(record)
        elif (
            getattr(report, RECORD_ATTR, None) is None
            and report.failed
            and case_id in self.inputs.cases_by_id
            and case_id not in self.received
        ):
            reason = report.longreprtext.strip().splitlines()[-1] if report.longreprtext.strip() else "no details"
            self.lost[case_id] = LostReport(
                case_id=case_id, nodeid=report.nodeid, when=report.when or "?", reason=reason[:300]
            )

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self._pytest_session = session

    def _stop_run(self, reason: str) -> None:
        """Records that cannot be kept make every further case wasted spend: stop after this one. As
        a failure (exit 1), not an interruption (2: a person stopped the run)."""
        if self.write_problem is None:
            self.write_problem = reason
        if self._pytest_session is not None and not self._pytest_session.shouldfail:
            self._pytest_session.shouldfail = f"guardbench: {reason}"

    def _write_failure(self, exc: OSError) -> str:
        return write_failure(exc, self.run_dir, self.inputs.settings.report_dir, len(self.received))

    def _progress(self, record: CaseRecord) -> None:
        errored = self.finish.tally.errored if self.finish is not None else 0
        self.counts.add(record, self.folder.prior, len(self.received), self.expected_ids, errored)

    # -- end of run -------------------------------------------------------------------------

    # tryfirst: the gate case's reports must reach the JUnit plugin before its own sessionfinish writes the file.
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        interrupts = self.config.stash.get(INTERRUPTS_KEY, None)
        if interrupts is not None:
            interrupts.finishing()
        try:
            if self.config.option.collectonly or self.abandoned or (not self.expected_ids and not self.received):
                return
            self._finish_run(session)
            self._report_gate()
        except OSError as exc:  # the run folder could not be made or read back: a disk fault, not a bug
            self._stop_run(self._write_failure(exc))
            self._report_not_written(session)
        except Exception as exc:  # noqa: BLE001 - reporting must never turn into a traceback
            self.internal_errors.append(f"could not write the guardbench report: {type(exc).__name__}: {exc}")
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
        finally:
            self.release()

    def _report_not_written(self, session: pytest.Session) -> None:
        """The report is not whole: exit 4 where the run would otherwise pass. Only then: a plugin
        (syrupy) ORs the status pytest began the finish with into the one it ends with, so 1 or 2
        stay as they are rather than become a status that means something else."""
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = ExitStatus.USAGE_ERROR

    def _report_gate(self) -> None:
        """The gate as one more test case, for every reporter (JUnit, the terminal's counts, --lf)."""
        if self.summary is None:
            return
        nodeid = gate_nodeid(self.suite_path, self.inputs.settings.shard)
        self._reporting_gate = True
        try:
            for report in gate_reports(nodeid, self.summary):
                self.config.hook.pytest_runtest_logreport(report=report)
        finally:
            self._reporting_gate = False

    def pytest_report_teststatus(self, report: pytest.TestReport) -> tuple[str, str, str] | None:
        return gate_teststatus(report, self._reporting_gate)

    def _observed(self, session: pytest.Session) -> Observed:
        option = self.config.option
        execution = list(self.execution)
        local = self.process.execution() if self.process is not None else None
        if local:
            execution.append(local)
        assert self.folder.run_id is not None, "the folder is made before the run is finished"
        return Observed(
            run_id=self.folder.run_id,
            run_dir=self.run_dir,
            started=self.started,
            elapsed_s=time.perf_counter() - self._started_clock,
            expected_ids=self.expected_ids,
            lost=self.lost,
            worker_crashes=self.worker_crashes,
            internal_errors=self.internal_errors,
            write_problem=self.write_problem,
            stopped=getattr(session, "shouldstop", False),
            interrupted=session.exitstatus == pytest.ExitCode.INTERRUPTED,
            keyword=getattr(option, "keyword", "") or "",
            markexpr=getattr(option, "markexpr", "") or "",
            update_snapshots=bool(getattr(option, "update_snapshots", False)),
            execution=execution,
            resume=self.folder.resume,
        )

    def _finish_run(self, session: pytest.Session) -> None:
        """Hand the run's facts to the finish, let plugins add their blocks, write the folder and set the status."""
        finish = self.folder.opened()
        finish.close_records()
        expected_ids = self.expected_ids | self.received
        if self.process is not None:
            self.judge_quality = run_judge_quality(self.inputs, self.process, lambda: run_folder.utc_now().isoformat())
        summary = finish.summary(run_facts(self.inputs, finish, self._observed(session), self.judge_quality))
        extensions: dict[str, Any] = {}
        self.config.hook.pytest_guardbench_summary(config=self.config, summary=summary, extensions=extensions)
        if extensions:
            summary = summary.model_copy(update={"extensions": extensions})
        expected = [c for c in self.inputs.cases if c.case_id in expected_ids]
        try:
            assert self.run_dir is not None
            meta = self._meta(self.folder.run_id, self.run_dir)
            finish.write(summary, manifest=manifest(self.inputs.data, expected), meta=meta)
        except OSError as exc:
            self._stop_run(self._write_failure(exc))
        else:
            # Only now: the gate's verdict is never told before summary.json exists.
            self.summary = summary
            try:
                append_step_summary(summary)
            except OSError as exc:
                name = exc.filename or "GITHUB_STEP_SUMMARY"
                self._stop_run(f"{name}: cannot append the step summary ({exc.strerror})")
        self._set_exit_status(session, summary)

    def _set_exit_status(self, session: pytest.Session, summary: RunSummary) -> None:
        if self.write_problem is not None:
            self._report_not_written(session)
        elif session.exitstatus != pytest.ExitCode.OK:
            return
        elif summary.gate.failures or self.internal_errors:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        elif summary.gate.inconclusive:
            session.exitstatus = ExitStatus.INCONCLUSIVE

    def interrupted_while_finishing(self) -> None:
        """A signal came while the reports were written: they were finished, and the run says it was
        stopped (2) as any stopped run does, whatever the gate said."""
        if self._pytest_session is not None:
            self._pytest_session.exitstatus = pytest.ExitCode.INTERRUPTED

    @property
    def gate(self) -> GateResult | None:
        """The gate of the written summary; None before it is written."""
        return self.summary.gate if self.summary is not None else None

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        stored = self.judge_quality.stored if self.judge_quality is not None else None
        write_result(
            terminalreporter,
            self.summary,
            self.write_problem,
            stored,
            self.run_dir,
            self.worker_crashes,
            self.internal_errors,
        )
