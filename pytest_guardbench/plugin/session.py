"""Controller-side state of a run: gathers one record per case from every process, then scores,
gates, writes the artifacts and sets the exit status."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from pytest_guardbench.results.artifacts import write_meta
from pytest_guardbench.results.markdown import summary_markdown
from pytest_guardbench.results.terminal import terminal_lines
from pytest_guardbench.run.lock import RunFolderLock
from pytest_guardbench.run import folder as run_folder, meta as run_meta, resume
from pytest_guardbench.scoring import baselines
from pytest_guardbench.scoring.scorecard import classify
from pytest_guardbench.scoring.tally import RunTally
from pytest_guardbench.results.finish import AddedChecks, CheckBuilder, RecordCounts, build_summary, write_artifacts
from pytest_guardbench.cases.sources import manifest
from pytest_guardbench.scoring.gates import GateResult
from pytest_guardbench.plugin.progress import Progress
from pytest_guardbench.plugin.gate_case import gate_nodeid, gate_reports, gate_teststatus
from pytest_guardbench.scoring.policies import ScoringPolicy
from pytest_guardbench.run.inputs import RunInputs
from pytest_guardbench.run.judge_factory import run_judge
from pytest_guardbench.run.judge_check import (
    STORE_FOLDER,
    check_key,
    judge_id,
    judge_identity,
    measured_quality,
    stored_check,
)
from pytest_guardbench.run.process import ProcessState
from pytest_guardbench.results.summary import RunInfo, RunSummary, Selection, SnapshotCheck, Stack, iter_records
from pytest_guardbench.records import CaseRecord
from pytest_guardbench.scoring.blocks import Confidence, LostReport, RunMetrics

RECORD_ATTR = "guardbench_record"
# The hidden fixture that every case fixture depends on and that parametrisation targets.
SLOT_FIXTURE = "_guardbench_slot"
# pytest uses 0-5; 6 tells CI "too few cases to decide" apart from a failed gate (1).
EXIT_GATE_INCONCLUSIVE = 6
WORKER_OUTPUT_KEY = "guardbench"


def case_id_of(nodeid: str) -> str | None:
    if not nodeid.endswith("]") or "[" not in nodeid:
        return None
    return nodeid[nodeid.rindex("[") + 1 : -1]


class GuardbenchSession:
    """Registered on the controller (or the only process). Never raises from a reporting hook."""

    def __init__(self, config: pytest.Config, inputs: RunInputs) -> None:
        self.config = config
        self.inputs = inputs
        # Records are counted as they arrive, never kept: the finish step reads the counters, and
        # results.jsonl has every record.
        self.counts = RecordCounts.under(RunTally(inputs.policy, inputs.settings.thresholds.min_recall or 0.9))
        self._repeated = False  # a case reported twice: the finish recounts results.jsonl, last line winning
        self.expected_ids: set[str] = set()
        self.suite_path: str | None = None  # the file of the first case, where the gate case is filed
        self._reporting_gate = False
        self.judge_check_reused: dict[str, Any] | None = None  # where the judge check came from, for run.execution
        self.abandoned = False  # the stack could not be built: no case ran and nothing is written
        self.lost: dict[str, LostReport] = {}
        self.worker_crashes: list[str] = []
        self.internal_errors: list[str] = []
        self.started = run_folder.utc_now()
        self._started_clock = time.perf_counter()
        self.run_id: str | None = None
        self.run_dir: Path | None = None
        self._writer: run_folder.ResultsWriter | None = None
        self.summary: RunSummary | None = None
        self.gate: GateResult | None = None
        self.execution: list[dict[str, Any]] = []  # per-process engine/cache/call counts
        self.process: ProcessState | None = None  # this process's models and engine, for its counts and the judge check
        self.prior: dict[str, CaseRecord] = {}
        self.resume_info: dict[str, Any] | None = None
        self.progress = Progress(config, inputs.settings.progress)
        self._fresh = 0  # cases run in this run (not reused from a resumed folder), for the rate
        self._pytest_session: pytest.Session | None = None
        self._lock: RunFolderLock | None = None
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
            self._writer = run_folder.ResultsWriter(self.run_dir / "results.jsonl")
            self.resume_info = {"run_dir": str(settings.resume), "finished_before": len(self.prior), "unreadable_lines": skipped,
                                "changed_cases": len(changed), "changed_case_ids": changed[:100]}  # fmt: skip

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
    def _ensure_run_dir(self) -> Path:
        if self.run_dir is None:
            self.run_id, self.run_dir = run_folder.make_run_dir(self.inputs.settings.report_dir, self.started)
            self._lock = RunFolderLock(self.run_dir).acquire()
            self._writer = run_folder.ResultsWriter(self.run_dir / "results.jsonl")
            # Written now, not only at the end, so a killed run can be checked before it is resumed.
            write_meta(
                self.run_dir,
                run_meta.meta(self.inputs, self.run_id, Path(self.config.rootpath), self.config.invocation_params.args),
            )
        return self.run_dir

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        payload = getattr(report, RECORD_ATTR, None)
        case_id = case_id_of(report.nodeid)
        if payload is not None:
            try:
                record = CaseRecord.model_validate(payload)
            except ValidationError as exc:
                self.internal_errors.append(f"{report.nodeid}: record failed validation: {exc.errors()[0]['msg']}")
                return
            self._count(record)
            self.lost.pop(record.case_id, None)
            self._ensure_run_dir()
            assert self._writer is not None
            try:
                self._writer.write(record)
            except run_folder.ReportWriteError as exc:
                self._stop_run(str(exc))
            self._progress(record)
        elif report.failed and case_id in self.inputs.cases_by_id and case_id not in self.received:
            reason = report.longreprtext.strip().splitlines()[-1] if report.longreprtext.strip() else "no details"
            self.lost[case_id] = LostReport(
                case_id=case_id, nodeid=report.nodeid, when=report.when or "?", reason=reason[:300]
            )

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self._pytest_session = session

    def _stop_run(self, reason: str) -> None:
        """Records that cannot be kept make every further case wasted spend: stop after this one."""
        if reason not in self.internal_errors:
            self.internal_errors.append(reason)
        if self._pytest_session is not None:
            self._pytest_session.shouldstop = f"guardbench: {reason}"

    def _progress(self, record: CaseRecord) -> None:
        if record.case_id not in self.prior:  # a resumed run's reused cases say nothing of the rate
            self._fresh += 1
        total = len(self.expected_ids) or len(self.inputs.cases)
        self.progress.update(len(self.received), total, self._fresh, self.counts.tally.errored)

    # -- end of run -------------------------------------------------------------------------
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

    def _judge_quality(self) -> tuple[dict[str, Any] | None, Confidence | None]:
        """The run's judge scored against human labels (check_judge's report); a low kappa marks the
        scorecard low-confidence."""
        labels = self.inputs.judge_labels
        if not labels or self.process is None:
            return None, None
        settings = self.inputs.settings
        assert settings.judge_check is not None and settings.cache_path is not None
        try:
            judge = run_judge(self.inputs, self.process)
            spec = self.inputs.model_specs.get("judge")
            identity = judge_identity(judge, spec)
            key = check_key(identity, settings.judge_check, settings.min_judge_kappa)
            quality, reused = stored_check(
                settings.cache_path.parent / STORE_FOLDER,
                key,
                lambda: measured_quality(judge, labels, settings.min_judge_kappa),
                lambda: run_folder.utc_now().isoformat(),
            )
            quality = {**quality, "judge_id": judge_id(identity), "judge_identity": identity}
            self.judge_check_reused = {"reused": reused, **quality.get("stored_check", {})}
        except Exception as exc:  # noqa: BLE001 - a broken check is reported, not a crash
            quality = {"error": f"{type(exc).__name__}: {exc}", "low_confidence": True}
        quality["labels_file"] = str(settings.judge_check)
        kappa = quality.get("cohen_kappa")
        if quality.get("low_confidence"):
            why = (
                quality.get("error")
                or f"judge kappa {'undefined' if kappa is None else f'{kappa:.3f}'} < {settings.min_judge_kappa:g} on {settings.judge_check}"
            )
            confidence = Confidence(level="low", reason=why)
        else:
            confidence = Confidence(level="normal", reason=f"judge kappa {kappa:.3f} >= {settings.min_judge_kappa:g}")
        return quality, confidence

    def _execution(self) -> dict[str, Any]:
        parts = list(self.execution)
        if self.process is not None:
            local = self.process.execution()
            if local:
                parts.append(local)
        merged = merge_counts(parts)
        if self.judge_check_reused is not None:
            merged["judge_check"] = self.judge_check_reused
        if self.resume_info is not None:
            merged["resume"] = self.resume_info
        return merged

    # tryfirst: the gate case's reports must reach the JUnit plugin before its own sessionfinish writes the file.
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        try:
            if self.config.option.collectonly or self.abandoned or (not self.expected_ids and not self.received):
                return
            self._finish_run(session)
            self._report_gate()
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

    @property
    def received(self) -> set[str]:
        """The case ids that reported a record."""
        return self.counts.tally.received

    def _count(self, record: CaseRecord) -> None:
        if record.case_id in self.received:
            self._repeated = True
            return
        self.counts.add(record)

    def _finish_run(self, session: pytest.Session) -> None:
        """The finish step: score the counted records, gate them and write the run folder."""
        settings = self.inputs.settings
        run_dir = self._ensure_run_dir()
        if self._writer is not None:
            self._writer.close()
        policy = self.inputs.policy
        if self._repeated:
            self.counts = RecordCounts.under(RunTally(policy, settings.thresholds.min_recall or 0.9))
            for record in iter_records(run_dir):
                self.counts.add(record)
        expected_ids = self.expected_ids | self.received
        missing = [c for c in self.inputs.cases if c.case_id in expected_ids and c.case_id not in self.received]
        judge_quality, confidence = self._judge_quality()
        checks: list[CheckBuilder] = []
        if settings.baseline is not None:
            comparison = baselines.compare_with_baseline(
                _handled(iter_records(run_dir), policy), _handled(iter_records(settings.baseline), policy)
            ).model_copy(
                update={
                    "run_dir": str(settings.baseline),
                    "judge_ids": _judge_ids(run_dir),
                    "baseline_judge_ids": _judge_ids(settings.baseline),
                }
            )
            checks.append(lambda _: AddedChecks(checks=[baselines.baseline_check(comparison)], baseline=comparison))
        if settings.scorecard_snapshot is not None:
            checks.append(self._scorecard_snapshot)
        run = RunInfo(
            run_id=self.run_id,
            started_at=self.started.isoformat(),
            finished_at=run_folder.utc_now().isoformat(),
            duration_s=round(time.perf_counter() - self._started_clock, 3),
            worker_crashes=self.worker_crashes,
            internal_errors=self.internal_errors,
            execution=self._execution(),
            usage=self.counts.tally.usage(self.inputs.prices),
        )
        finished = build_summary(self.counts.tally, settings.thresholds, run=run, stack=Stack.model_validate(run_meta.stack_of(self.inputs.settings)),
                                 selection=self._selection(), missing=missing, lost=[self.lost[k] for k in sorted(self.lost)],
                                 incomplete_reasons=self._incomplete_reasons(session), warnings=self._served_model_warnings(),
                                 judge_quality=judge_quality, confidence=confidence, checks=checks)  # fmt: skip
        document = finished.as_json()
        self.config.hook.pytest_guardbench_summary(config=self.config, summary=document)  # a plugin may add blocks
        self.summary = summary = RunSummary.model_validate(document)
        self.gate = summary.gate
        expected = [c for c in self.inputs.cases if c.case_id in expected_ids]
        write_artifacts(
            run_dir,
            summary,
            self.counts.picks,
            manifest=manifest(self.inputs.data, expected),
            meta=run_meta.meta(
                self.inputs, self.run_id, Path(self.config.rootpath), self.config.invocation_params.args
            ),
        )
        _append_github_step_summary(summary)
        if session.exitstatus != pytest.ExitCode.OK:
            return
        if self.gate.failures or self.internal_errors:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        elif self.gate.inconclusive:
            session.exitstatus = EXIT_GATE_INCONCLUSIVE

    def _served_model_warnings(self) -> list[str]:
        """A server that answers as another model (a proxy's fallback, a wrong deployment) is still
        measured, but the scorecard must not be filed under the model that was asked for."""
        spec = self.inputs.model_specs.get("tutor")
        if spec is None or spec.provider != "openai-compat":
            return []
        served = sorted(self.counts.tally.tutor_models - {spec.model})
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
        reasons.extend(f"worker crash: {crash}" for crash in self.worker_crashes)
        limit = self.inputs.settings.max_duration
        not_run = len(self.expected_ids - self.received)
        if limit is not None and not_run and time.perf_counter() - self._started_clock > limit:
            reasons.append(f"--guardbench-max-duration {limit:g} s reached: {not_run} case(s) not run")
        return reasons

    def _scorecard_snapshot(self, metrics: RunMetrics) -> AddedChecks:
        """Compare with the committed scorecard file; write it when missing or on --snapshot-update."""
        settings = self.inputs.settings
        path, tolerance = settings.scorecard_snapshot, settings.scorecard_tolerance
        assert path is not None
        current = baselines.scorecard_snapshot(metrics)
        update = bool(getattr(self.config.option, "update_snapshots", False))
        if path.is_file() and not update:
            stored = json.loads(path.read_text(encoding="utf-8"))
            return AddedChecks(checks=baselines.compare_scorecard(current, stored, tolerance),
                               scorecard_snapshot=SnapshotCheck(path=str(path), tolerance=tolerance, stored=stored))  # fmt: skip
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return AddedChecks(scorecard_snapshot=SnapshotCheck(path=str(path), tolerance=tolerance, written=True))

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        if self.summary is None:
            for error in self.internal_errors:
                terminalreporter.write_line(f"guardbench: {error}", red=True)
            return
        terminalreporter.write_sep("=", "guardbench")
        for line in terminal_lines(self.summary):
            terminalreporter.write_line(line)
        confidence = self.summary.confidence
        if confidence and confidence.level == "low":
            terminalreporter.write_line(
                f"guardbench: LOW CONFIDENCE scorecard: {confidence.reason}", yellow=True, bold=True
            )
        if self.judge_check_reused and self.judge_check_reused["reused"]:
            terminalreporter.write_line(
                f"judge check reused from {self.judge_check_reused['path']} (computed {self.judge_check_reused['computed_at']})"
            )
        terminalreporter.write_line(f"scorecard: {self.run_dir / 'summary.json' if self.run_dir else '?'}")
        for crash in self.worker_crashes:
            terminalreporter.write_line(f"guardbench: {crash}", red=True)
        for error in self.internal_errors:
            terminalreporter.write_line(f"guardbench: internal error: {error}", red=True)
        assert self.gate is not None
        if self.gate.passed:
            terminalreporter.write_line(
                "guardbench gate passed: " + "; ".join(c.message for c in self.gate.checks), green=True
            )
            return
        for check in self.gate.failures:
            terminalreporter.write_line(f"guardbench gate failed: {check.message}", red=True, bold=True)
        for check in self.gate.undecided:
            terminalreporter.write_line(f"guardbench gate inconclusive: {check.message}", yellow=True, bold=True)


def _handled(records: Iterable[CaseRecord], policy: ScoringPolicy) -> dict[str, bool]:
    """case id → handled correctly under `policy`, for every scored record (a baseline run's records
    are rescored under this run's policy, so the pairs compare like with like)."""
    result = {}
    for record in records:
        outcome, _ = classify(record, policy)
        if outcome is not None:
            result[record.case_id] = outcome in ("TP", "TN")
    return result


def _append_github_step_summary(summary: RunSummary) -> None:
    """In GitHub Actions, add the markdown scorecard and gate result to the job summary."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return
    with open(target, "a", encoding="utf-8") as handle:
        handle.write(summary_markdown(summary) + "\n")


class XdistBridge:
    """xdist-only hooks, registered only when xdist is present so a plain run never sees them."""

    def __init__(self, session: GuardbenchSession) -> None:
        self.session = session

    def pytest_testnodedown(self, node: Any, error: object) -> None:
        self.session.merge_worker(node.gateway.id, getattr(node, "workeroutput", None), error)

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """What each worker selected, known as soon as it has collected: an interrupted run, whose
        workers never send their final output, still knows how many cases were selected."""
        cases = [nodeid for nodeid in ids if case_id_of(nodeid) in self.session.inputs.cases_by_id]
        self.session.expected_ids.update(case_id for case_id in map(case_id_of, cases) if case_id is not None)
        if cases and self.session.suite_path is None:
            self.session.suite_path = cases[0].split("::")[0]


def merge_counts(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Add up per-process counters (nested dicts of numbers); `lowest_*` keys keep the minimum and
    strings (a mode, a path) keep the first value seen."""
    merged: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if isinstance(value, dict):
                merged[key] = merge_counts([merged.get(key, {}), value])
            elif isinstance(value, bool) or not isinstance(value, int | float):
                merged.setdefault(key, value)
            elif key.startswith("lowest") and key in merged:
                merged[key] = min(merged[key], value)
            else:
                merged[key] = merged.get(key, 0) + value
    return merged


def _judge_ids(run_dir: Path) -> list[str]:
    return sorted({record.judge_id for record in iter_records(run_dir) if record.judge_id is not None})
