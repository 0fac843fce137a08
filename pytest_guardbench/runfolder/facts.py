"""The facts a run's finish is told besides its records, decided from what the controller observed:
the run block, the selection, the warnings (a demo stack, a tutor that answered as another model,
the judge check's), why the run is incomplete, and the gate checks it adds (a baseline run, a
committed scorecard snapshot). The pytest session only observes (`Observed`); the rules are here."""

from __future__ import annotations

from pytest_guardbench.document.execution import Execution

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from pytest_guardbench.document.execution import ResumeFacts
from pytest_guardbench.document.metrics import LostReport
from pytest_guardbench.document.summary import RunInfo, Selection, StackInfo
from pytest_guardbench.records import Case
from pytest_guardbench.run.inputs import RunInputs
from pytest_guardbench.run.judge_quality import RunJudgeQuality
from pytest_guardbench.runfolder import meta as run_meta
from pytest_guardbench.runfolder.checks import baseline_check, scorecard_snapshot_check
from pytest_guardbench.runfolder.execution import merged_execution
from pytest_guardbench.runfolder.finish import CheckBuilder, RunFacts, RunFinish
from pytest_guardbench.runfolder.folder import utc_now
from pytest_guardbench.settings.config import Settings


@dataclass
class Observed:
    """What the controller saw of a run while it ran: which cases were selected, which never
    reported and why, the processes' counters, and how the run ended."""

    run_id: str
    run_dir: Path | None
    started: datetime
    elapsed_s: float
    expected_ids: set[str]
    lost: Mapping[str, LostReport] = field(default_factory=dict)
    worker_crashes: Sequence[str] = ()
    internal_errors: Sequence[str] = ()
    write_problem: str | None = None  # why the run folder could not take a record
    stopped: str | bool = False  # pytest's `shouldstop`: a reason, or False
    interrupted: bool = False
    keyword: str = ""
    markexpr: str = ""
    update_snapshots: bool = False
    execution: Sequence[Execution] = ()  # each process's counters
    resume: ResumeFacts | None = None


def run_facts(inputs: RunInputs, finish: RunFinish, seen: Observed, judge_quality: RunJudgeQuality | None) -> RunFacts:
    """Everything the finish is told about a pytest run besides its records."""
    received = finish.received
    expected = seen.expected_ids | received
    quality = judge_quality
    return RunFacts(
        run=run_info(seen, finish, inputs, quality),
        stack=StackInfo.model_validate(run_meta.stack_of(inputs)),
        selection=selection(seen, inputs),
        missing=missing_cases(inputs, expected, received),
        lost=[seen.lost[k] for k in sorted(seen.lost)],
        incomplete_reasons=incomplete_reasons(seen, inputs.settings.max_duration, len(seen.expected_ids - received)),
        warnings=[
            *demo_warnings(inputs.settings),
            *served_model_warnings(inputs, finish.tally.tutor_models),
            *(quality.warnings if quality else ()),
        ],
        judge_quality=quality.quality if quality else None,
        confidence=quality.confidence if quality else None,
        checks=added_checks(inputs, finish, seen.update_snapshots),
        min_judge_kappa=inputs.settings.min_judge_kappa,
    )


def run_info(seen: Observed, finish: RunFinish, inputs: RunInputs, quality: RunJudgeQuality | None) -> RunInfo:
    return RunInfo(
        run_id=seen.run_id,
        started_at=seen.started.isoformat(),
        finished_at=utc_now().isoformat(),
        duration_s=round(seen.elapsed_s, 3),
        worker_crashes=list(seen.worker_crashes),
        internal_errors=list(seen.internal_errors),
        execution=merged_execution(
            seen.execution, judge_check=quality.stored if quality is not None else None, resume=seen.resume
        ),
        usage=finish.tally.usage(inputs.prices),
    )


def selection(seen: Observed, inputs: RunInputs) -> Selection:
    selected, total = len(seen.expected_ids), len(inputs.cases)
    shard = inputs.settings.shard
    return Selection(
        keyword=seen.keyword,
        markexpr=seen.markexpr,
        selected_cases=selected,
        total_cases=total,
        partial=selected < total,
        shard="/".join(map(str, shard)) if shard else None,
    )


def demo_warnings(settings: Settings) -> list[str]:
    """A run of the embedded demo tutor measures the demo: say so, and how to point it at a real tutor."""
    if settings.tutor != Settings.model_fields["tutor"].default:
        return []
    return [
        "demo stack: the embedded SmolLM2-135M tutor answered; these numbers measure the demo, not your "
        "tutor: name yours with --tutor (ini guardbench_tutor), e.g. guardbench init --force --tutor <spec>"
    ]


def served_model_warnings(inputs: RunInputs, tutor_models: set[str]) -> list[str]:
    """A server that answers as another model (a proxy's fallback, a wrong deployment) is still
    measured, but the scorecard must not be filed under the model that was asked for."""
    spec = inputs.model_specs.get("tutor")
    if spec is None or spec.provider != "openai-compat":
        return []
    served = sorted(tutor_models - {spec.model})
    # Servers often answer with a longer form of the name (a dated snapshot, a path): only a different name counts.
    others = [m for m in served if spec.model not in m and m not in spec.model]
    return [f"tutor {spec.alias} answered as {', '.join(others)}, not {spec.model}"] if others else []


def incomplete_reasons(seen: Observed, max_duration: float | None, not_run: int) -> list[str]:
    """Why the run did not measure every selected case; each is also a failing gate check."""
    reasons = []
    resume = f"finish it with --guardbench-resume {seen.run_dir}"
    if seen.interrupted or seen.stopped:
        reasons.append(f"run stopped early ({seen.stopped or 'interrupted'}); {resume}")
    if seen.write_problem is not None and not seen.stopped:
        reasons.append(f"run stopped early ({seen.write_problem}); {resume}")
    reasons.extend(f"worker crash: {crash}" for crash in seen.worker_crashes)
    if max_duration is not None and not_run and seen.elapsed_s > max_duration:
        reasons.append(f"--guardbench-max-duration {max_duration:g} s reached: {not_run} case(s) not run")
    return reasons


def added_checks(inputs: RunInputs, finish: RunFinish, update_snapshots: bool) -> list[CheckBuilder]:
    """The gate checks a run adds from outside its records: a baseline run, a committed scorecard."""
    settings = inputs.settings
    checks: list[CheckBuilder] = []
    if settings.baseline is not None:
        assert finish.handled is not None, "a run with a baseline keeps its cases' handling"
        checks.append(baseline_check(finish.handled, finish.tally.judge_ids, settings.baseline, inputs.policy))
    if settings.scorecard_snapshot is not None:
        checks.append(
            scorecard_snapshot_check(settings.scorecard_snapshot, settings.scorecard_tolerance, update_snapshots)
        )
    return checks


def missing_cases(inputs: RunInputs, expected: set[str], received: set[str]) -> list[Case]:
    """The selected cases that never reported, in the run's order."""
    return [c for c in inputs.cases if c.case_id in expected and c.case_id not in received]


def write_failure(exc: OSError, run_dir: Path | None, report_dir: Path, received: int) -> str:
    """One line for a file of the run folder that could not be written: the path, why, and what is kept."""
    where = exc.filename or run_dir or report_dir
    results = run_dir / "results.jsonl" if run_dir is not None else None
    if results is not None and results.is_file():
        kept = f"{results} keeps the {received} outcome(s) written before it"
    else:
        kept = "no outcome of this run is kept (its folder is gone)" if run_dir else "nothing was written"
    return f"{where}: cannot write the run's report ({exc.strerror or type(exc).__name__}); {kept}"
