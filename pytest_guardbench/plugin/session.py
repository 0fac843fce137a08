"""Controller-side state of a run: gathers one record (and its score) per case from every process and
hands it to the run folder's finish (`runfolder.finish.RunFinish`), then sets the exit status and
prints the result. The finish itself (scoring, the gate, the files) lives in `runfolder`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from pytest_guardbench.cases.sources import manifest
from pytest_guardbench._util.redact import redact
from pytest_guardbench.errors import GuardbenchError
from pytest_guardbench.exit_status import ExitStatus
from pytest_guardbench.plugin.gate_case import gate_nodeid, gate_reports, gate_teststatus
from pytest_guardbench.plugin.progress import Progress
from pytest_guardbench.plugin.console import result_lines
from pytest_guardbench.plugin.wire import RECORD_ATTR, SCORE_ATTR, SLOT_FIXTURE, WORKER_OUTPUT_KEY, case_id_of
from pytest_guardbench.records import CaseRecord
from pytest_guardbench.results.artifacts import write_meta
from pytest_guardbench.results.github_summary import append_step_summary
from pytest_guardbench.document.summary import RunInfo, RunSummary, Selection, StackInfo
from pytest_guardbench.run.inputs import RunInputs
from pytest_guardbench.run.judge_quality import RunJudgeQuality, run_judge_quality
from pytest_guardbench.run.preflight import PreflightInBackground
from pytest_guardbench.run.process import ProcessState
from pytest_guardbench.run.stack import calls_only_apis
from pytest_guardbench.runfolder import folder as run_folder, meta as run_meta, resume
from pytest_guardbench.runfolder.checks import baseline_check, scorecard_snapshot_check
from pytest_guardbench.runfolder.execution import merged_execution
from pytest_guardbench.runfolder.finish import CheckBuilder, RunFacts, RunFinish
from pytest_guardbench.audit.labels import RunLabels
from pytest_guardbench.runfolder.lock import RunFolderLock
from pytest_guardbench.document.metrics import LostReport
from pytest_guardbench.document.execution import ResumeFacts
from pytest_guardbench.document.gate import GateResult
from pytest_guardbench.scoring.scorecard import Scored
from pytest_guardbench.settings.config import Settings


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
        self.labels = labels  # a person's labels of this run's replies: the finish corrects the scorecards
        self.expected_ids: set[str] = set()
        self.suite_path: str | None = None  # the file of the first case, where the gate case is filed
        self._reporting_gate = False
        self.judge_quality: RunJudgeQuality | None = None
        self.abandoned = False  # the stack could not be built: no case ran and nothing is written
        self.lost: dict[str, LostReport] = {}
        self.worker_crashes: list[str] = []
        self.internal_errors: list[str] = []
        # The first reason the run folder could not be written (a full disk, a folder removed): not a
        # bug, so not an internal error. One line naming the path; mid-run the run stops as failed (1),
        # and a finished run whose report cannot be written exits 4.
        self.write_problem: str | None = None
        self.started = run_folder.utc_now()
        self._started_clock = time.perf_counter()
        self.run_id: str | None = None
        self.run_dir: Path | None = None
        self.finish: RunFinish | None = None
        self.summary: RunSummary | None = None
        self.gate: GateResult | None = None
        self.execution: list[dict[str, Any]] = []  # per-process engine/cache/call counts
        self.process: ProcessState | None = None  # this process's models and engine, for its counts and the judge check
        self.prior: dict[str, CaseRecord] = {}
        self.resume_facts: ResumeFacts | None = None
        self.progress = Progress(config, inputs.settings.progress)
        self._fresh = 0  # cases run in this run (not reused from a resumed folder), for the rate
        self._turns_done = 0  # a conversation run's answered turns, which measure its rate
        self._turns_total: int | None = None
        self._pytest_session: pytest.Session | None = None
        self._lock: RunFolderLock | None = None
        # Records this process made itself, by node id, from the report hook until the report is logged.
        self._handed: dict[str, tuple[CaseRecord, Scored]] = {}
        settings = inputs.settings
        if settings.resume is not None:
            # Taken before prepare(), which rewrites the folder: a second process on it stops here.
            self._lock = RunFolderLock(settings.resume).acquire()
            try:
                self.prior, skipped, changed = resume.prepare(
                    settings.resume, run_meta.identity(self.inputs), inputs.cases_by_id
                )
            except BaseException:
                self.release()
                raise
            self.run_dir, self.run_id = settings.resume, settings.resume.name
            self.finish = self._open_finish(self.run_dir)
            self.resume_facts = ResumeFacts(
                run_dir=str(settings.resume),
                finished_before=len(self.prior),
                unreadable_lines=skipped,
                changed_cases=len(changed),
                changed_case_ids=changed[:100],
            )

    # -- collection -------------------------------------------------------------------------

    def abandon(self) -> None:
        """The stack could not be built: no case ran, so the finish writes no run folder."""
        self.abandoned = True

    def release(self) -> None:
        """Let the next process have the run folder (after the finish, or when the run is abandoned)."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def pytest_collection_finish(self, session: pytest.Session) -> None:
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
                self.execution.append(payload["execution"])

    # -- records ----------------------------------------------------------------------------

    def _open_finish(self, run_dir: Path) -> RunFinish:
        settings = self.inputs.settings
        return RunFinish(
            run_dir,
            self.inputs.policy,
            settings.thresholds,
            keep_handled=settings.baseline is not None,
            labels=self.labels,
        )

    def _ensure_finish(self) -> RunFinish:
        if self.finish is None:
            self.run_id, self.run_dir = run_folder.make_run_dir(self.inputs.settings.report_dir, self.started)
            self._lock = RunFolderLock(self.run_dir).acquire()
            self.finish = self._open_finish(self.run_dir)
            # Written now, not only at the end, so a killed run can be checked before it is resumed.
            write_meta(self.run_dir, self._meta())
        return self.finish

    def _meta(self) -> dict[str, Any]:
        return run_meta.meta(self.inputs, self.run_id, Path(self.config.rootpath), self.config.invocation_params.args)

    def hand_over(self, nodeid: str, record: CaseRecord, scored: Scored) -> None:
        """A record made in this process (no xdist), for the report of `nodeid` about to be logged."""
        self._handed[nodeid] = (record, scored)

    def _record_of(self, report: pytest.TestReport) -> tuple[CaseRecord, Scored | None] | None:
        """The record a report brings: handed over in this process, or on the report from a worker."""
        handed = self._handed.pop(report.nodeid, None)
        if handed is not None:
            return handed
        payload = getattr(report, RECORD_ATTR, None)
        if payload is None:
            return None
        try:
            record = CaseRecord.model_validate(payload)
        except ValidationError as exc:
            self.internal_errors.append(f"{report.nodeid}: record failed validation: {exc.errors()[0]['msg']}")
            return None
        score = getattr(report, SCORE_ATTR, None)
        return record, Scored(*score) if score is not None else None

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        brought = self._record_of(report)
        case_id = case_id_of(report.nodeid)
        if brought is not None:
            record, scored = brought
            self.lost.pop(record.case_id, None)
            try:
                self._ensure_finish().add(record, scored)
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

    def _report_not_written(self, session: pytest.Session) -> None:
        """The report is not whole: exit 4 where the run would otherwise pass. Only then: a plugin
        (syrupy) ORs the status pytest began the finish with into the one it ends with, so 1 or 2
        stay as they are rather than become a status that means something else."""
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = ExitStatus.USAGE_ERROR

    def _write_failure(self, exc: OSError) -> str:
        """One line for a file of the run folder that could not be written: the path, why, and what is kept."""
        where = exc.filename or self.run_dir or self.inputs.settings.report_dir
        results = self.run_dir / "results.jsonl" if self.run_dir is not None else None
        if results is not None and results.is_file():
            kept = f"{results} keeps the {len(self.received)} outcome(s) written before it"
        else:
            kept = "no outcome of this run is kept (its folder is gone)" if self.run_dir else "nothing was written"
        return f"{where}: cannot write the run's report ({exc.strerror or type(exc).__name__}); {kept}"

    def _progress(self, record: CaseRecord) -> None:
        if record.case_id not in self.prior:  # a resumed run's reused cases say nothing of the rate
            self._fresh += 1
        total = len(self.expected_ids) or len(self.inputs.cases)
        errored = self.finish.tally.errored if self.finish is not None else 0
        if self._turns_total is None:  # the selection is known by the first record
            cases = self.inputs.cases_by_id
            ids = self.expected_ids or set(cases)
            self._turns_total = sum(
                len(cases[i].live_positions()) for i in ids if i in cases and cases[i].is_conversation
            )
        if record.turns and record.case_id not in self.prior:
            self._turns_done += sum(1 for turn in record.turns if turn.role == "assistant" and turn.reply is not None)
        turns = (self._turns_done, self._turns_total) if self._turns_total else None
        self.progress.update(len(self.received), total, self._fresh, errored, turns)

    @property
    def received(self) -> set[str]:
        """The case ids that reported a record."""
        return self.finish.received if self.finish is not None else set()

    # -- end of run -------------------------------------------------------------------------

    # tryfirst: the gate case's reports must reach the JUnit plugin before its own sessionfinish writes the file.
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
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

    def _report_gate(self) -> None:
        """The gate as one more test case, for every reporter (JUnit, the terminal's counts, --lf)."""
        if self.gate is None:
            return
        nodeid = gate_nodeid(self.suite_path, self.inputs.settings.shard)
        self._reporting_gate = True
        try:
            for report in gate_reports(nodeid, self.gate):
                self.config.hook.pytest_runtest_logreport(report=report)
        finally:
            self._reporting_gate = False

    def pytest_report_teststatus(self, report: pytest.TestReport) -> tuple[str, str, str] | None:
        return gate_teststatus(report, self._reporting_gate)

    def _finish_run(self, session: pytest.Session) -> None:
        """Hand the run's facts to the finish, let plugins add their blocks, write the folder and set the status."""
        settings = self.inputs.settings
        finish = self._ensure_finish()
        finish.close_records()
        expected_ids = self.expected_ids | self.received
        missing = [c for c in self.inputs.cases if c.case_id in expected_ids and c.case_id not in self.received]
        if self.process is not None:
            self.judge_quality = run_judge_quality(self.inputs, self.process, lambda: run_folder.utc_now().isoformat())
        checks: list[CheckBuilder] = []
        if settings.baseline is not None:
            assert finish.handled is not None, "a run with a baseline keeps its cases' handling"
            checks.append(baseline_check(finish.handled, finish.tally.judge_ids, settings.baseline, self.inputs.policy))
        if settings.scorecard_snapshot is not None:
            update = bool(getattr(self.config.option, "update_snapshots", False))
            checks.append(scorecard_snapshot_check(settings.scorecard_snapshot, settings.scorecard_tolerance, update))
        quality = self.judge_quality
        facts = RunFacts(
            run=self._run_info(),
            stack=StackInfo.model_validate(run_meta.stack_of(self.inputs)),
            selection=self._selection(),
            missing=missing,
            lost=[self.lost[k] for k in sorted(self.lost)],
            incomplete_reasons=self._incomplete_reasons(session),
            warnings=[
                *self._demo_warnings(),
                *self._served_model_warnings(),
                *(self.judge_quality.warnings if self.judge_quality else ()),
            ],
            judge_quality=quality.quality if quality else None,
            confidence=quality.confidence if quality else None,
            checks=checks,
            min_judge_kappa=settings.min_judge_kappa,
        )
        summary = finish.summary(facts)
        extensions: dict[str, Any] = {}
        self.config.hook.pytest_guardbench_summary(config=self.config, summary=summary, extensions=extensions)
        if extensions:
            summary = summary.model_copy(update={"extensions": extensions})
        expected = [c for c in self.inputs.cases if c.case_id in expected_ids]
        try:
            finish.write(summary, manifest=manifest(self.inputs.data, expected), meta=self._meta())
        except OSError as exc:
            self._stop_run(self._write_failure(exc))
        else:
            # Only now: the gate's verdict is never told before summary.json exists.
            self.summary, self.gate = summary, summary.gate
            try:
                append_step_summary(summary)
            except OSError as exc:
                self._stop_run(
                    f"{exc.filename or 'GITHUB_STEP_SUMMARY'}: cannot append the step summary ({exc.strerror})"
                )
        if self.write_problem is not None:
            self._report_not_written(session)
            return
        if session.exitstatus != pytest.ExitCode.OK:
            return
        if summary.gate.failures or self.internal_errors:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        elif summary.gate.inconclusive:
            session.exitstatus = ExitStatus.INCONCLUSIVE

    def _run_info(self) -> RunInfo:
        parts = list(self.execution)
        local = self.process.execution() if self.process is not None else None
        if local:
            parts.append(local)
        stored = self.judge_quality.stored if self.judge_quality is not None else None
        assert self.finish is not None
        return RunInfo(
            run_id=self.run_id,
            started_at=self.started.isoformat(),
            finished_at=run_folder.utc_now().isoformat(),
            duration_s=round(time.perf_counter() - self._started_clock, 3),
            worker_crashes=self.worker_crashes,
            internal_errors=self.internal_errors,
            execution=merged_execution(parts, judge_check=stored, resume=self.resume_facts),
            usage=self.finish.tally.usage(self.inputs.prices),
        )

    def _selection(self) -> Selection:
        option = self.config.option
        return Selection(
            keyword=getattr(option, "keyword", "") or "",
            markexpr=getattr(option, "markexpr", "") or "",
            selected_cases=len(self.expected_ids),
            total_cases=len(self.inputs.cases),
            partial=len(self.expected_ids) < len(self.inputs.cases),
            shard="/".join(map(str, self.inputs.settings.shard)) if self.inputs.settings.shard else None,
        )

    def _demo_warnings(self) -> list[str]:
        """A run of the embedded demo tutor measures the demo: say so, and how to point it at a real tutor."""
        if self.inputs.settings.tutor != Settings.model_fields["tutor"].default:
            return []
        return [
            "demo stack: the embedded SmolLM2-135M tutor answered; these numbers measure the demo, not your "
            "tutor: name yours with --tutor (ini guardbench_tutor), e.g. guardbench init --force --tutor <spec>"
        ]

    def _served_model_warnings(self) -> list[str]:
        """A server that answers as another model (a proxy's fallback, a wrong deployment) is still
        measured, but the scorecard must not be filed under the model that was asked for."""
        spec = self.inputs.model_specs.get("tutor")
        if spec is None or spec.provider != "openai-compat" or self.finish is None:
            return []
        served = sorted(self.finish.tally.tutor_models - {spec.model})
        # Servers often answer with a longer form of the name (a dated snapshot, a path): only a different name counts.
        others = [m for m in served if spec.model not in m and m not in spec.model]
        return [f"tutor {spec.alias} answered as {', '.join(others)}, not {spec.model}"] if others else []

    def _incomplete_reasons(self, session: pytest.Session) -> list[str]:
        reasons = []
        stopped = getattr(session, "shouldstop", False)
        if session.exitstatus == pytest.ExitCode.INTERRUPTED or stopped:
            reasons.append(
                f"run stopped early ({stopped or 'interrupted'}); finish it with --guardbench-resume {self.run_dir}"
            )
        if self.write_problem is not None and not stopped:
            reasons.append(
                f"run stopped early ({self.write_problem}); finish it with --guardbench-resume {self.run_dir}"
            )
        reasons.extend(f"worker crash: {crash}" for crash in self.worker_crashes)
        limit = self.inputs.settings.max_duration
        not_run = len(self.expected_ids - self.received)
        if limit is not None and not_run and time.perf_counter() - self._started_clock > limit:
            reasons.append(f"--guardbench-max-duration {limit:g} s reached: {not_run} case(s) not run")
        return reasons

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        if self.write_problem is not None:
            terminalreporter.write_line(f"guardbench: {self.write_problem}", red=True, bold=True)
        if self.summary is None:
            for error in self.internal_errors:
                terminalreporter.write_line(f"guardbench: {error}", red=True)
            return
        terminalreporter.write_sep("=", "guardbench")
        stored = self.judge_quality.stored if self.judge_quality is not None else None
        scorecard = self.run_dir / "summary.json" if self.run_dir else None
        for line, markup in result_lines(self.summary, stored, scorecard, self.worker_crashes, self.internal_errors):
            terminalreporter.write_line(line, **markup)


class XdistBridge:
    """xdist-only hooks, registered only when xdist is present so a plain run never sees them."""

    def __init__(self, session: GuardbenchSession) -> None:
        self.session = session

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        """The models must have answered the preflight before xdist sends any worker a test; a model
        that did not stops the run here as it would have at configure time: exit 4, one line."""
        pending, self.session.preflight = self.session.preflight, None
        if pending is None:
            return
        try:
            pending.wait()
        except GuardbenchError as exc:
            if exc.exit_status == ExitStatus.INTERNAL_ERROR:
                raise
            self.session.abandon()
            raise pytest.UsageError(redact(f"guardbench: {exc}")) from None

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any | None:
        """`--dist load` (what `-n` means by default) over a run that only calls API models: each
        worker gets its whole share at once (`xdist_schedule`). Any other choice is xdist's, and so is
        a run that sets `--maxschedchunk` (it asked for xdist's chunks)."""
        if (
            config.getoption("dist", None) != "load"
            or config.getoption("maxschedchunk", None) is not None
            or not self.session.inputs.cases
            or not calls_only_apis(self.session.inputs)
        ):
            return None
        from pytest_guardbench.plugin.xdist_schedule import whole_share_scheduler

        return whole_share_scheduler(config, log)

    def pytest_testnodedown(self, node: Any, error: object) -> None:
        self.session.merge_worker(node.gateway.id, getattr(node, "workeroutput", None), error)

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """What each worker selected, known as soon as it has collected: an interrupted run, whose
        workers never send their final output, still knows how many cases were selected."""
        cases = [nodeid for nodeid in ids if case_id_of(nodeid) in self.session.inputs.cases_by_id]
        self.session.expected_ids.update(case_id for case_id in map(case_id_of, cases) if case_id is not None)
        if cases and self.session.suite_path is None:
            self.session.suite_path = cases[0].split("::")[0]
