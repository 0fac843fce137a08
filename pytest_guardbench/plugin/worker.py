"""What an xdist worker (or the single process) does with its share of the cases: which ones the
scheduler has queued for it, putting them in flight on the engine, and what it reports back to the
controller at its session end."""

from __future__ import annotations

import time
from dataclasses import dataclass
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_guardbench._util.terminal import shown
from pytest_guardbench.providers.cache import CacheUnusable
from pytest_guardbench.providers.smollm2_gguf import converted_smollm2, pending_conversion
from pytest_guardbench.run.engine import Engine
from pytest_guardbench.run.inputs import RunInputs
from pytest_guardbench.records import Case, CaseRecord
from pytest_guardbench.plugin.progress import Progress
from pytest_guardbench.plugin.wire import SLOT_FIXTURE
from pytest_guardbench.run.process import ProcessState
from pytest_guardbench.run.stack import build_stack
from pytest_guardbench.settings.config import Settings


def xdist_queue(config: pytest.Config, state: ProcessState) -> list[int]:
    """Indices (into session.items) that the xdist scheduler has already sent this worker and that
    it has not started yet. Read from the worker's own queue; empty if xdist changes its internals."""
    if not state.xdist_queue_looked_up:  # looked up once: this runs before every test of a worker
        state.xdist_queue_looked_up = True
        state.xdist_queue = next(
            (
                getattr(p, "torun")
                for p in config.pluginmanager.get_plugins()
                if type(p).__name__ == "WorkerInteractor" and hasattr(getattr(p, "torun", None), "lock")
            ),
            None,
        )
    if state.xdist_queue is None:
        return []
    with state.xdist_queue.lock() as pending:
        return [i for i in pending if isinstance(i, int)]


def case_of(item: pytest.Item) -> Case | None:
    callspec = getattr(item, "callspec", None)
    case = callspec.params.get(SLOT_FIXTURE) if callspec is not None else None
    return case if isinstance(case, Case) else None


def schedule(
    engine: Engine, state: ProcessState, config: pytest.Config, items: list[pytest.Item], worker: bool
) -> None:
    """Put this process's selected cases in flight: in a single process, every selected item at the
    first test; in an xdist worker, whatever the scheduler has queued for it so far."""
    if not worker:
        if not state.submitted_all:
            state.submitted_all = True
            engine.submit(case for case in map(case_of, items) if case is not None)
        return
    queued = [case_of(items[i]) for i in xdist_queue(config, state) if i < len(items)]
    engine.submit(case for case in queued if case is not None)


def start_engine(
    session: pytest.Session, state: ProcessState, inputs: RunInputs, on_abandon: Callable[[], None]
) -> None:
    """Build the stack and start this process's engine. A model that passed the preflight and still
    cannot load stops the run with one line (`on_abandon` first: no report folder for a run that
    never started)."""
    config = session.config
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    # The first run with an empty model cache converts the embedded tutor (a minute or two): say so.
    embedded = inputs.settings.tutor == Settings.model_fields["tutor"].default
    pending = pending_conversion(inputs.settings.model_cache) if embedded else None
    if pending is not None and reporter is not None:
        reporter.write_line(
            f"guardbench: preparing the embedded tutor once (converting SmolLM2 into {pending}); later runs reuse it"
        )
    started = time.monotonic()
    try:
        if pending is not None:
            converted_smollm2(inputs.settings.model_cache)  # now, between the two lines, not inside the first case
        workerinput = getattr(config, "workerinput", None)
        processes = int(workerinput.get("workercount", 1)) if workerinput is not None else 1
        stack = build_stack(inputs, state, Path(config.rootpath), workerinput is not None, processes)
    except Exception as exc:  # noqa: BLE001 - any loader error becomes the one line
        on_abandon()
        text = str(exc).strip()
        reason = text.splitlines()[0] if text else type(exc).__name__
        # The response cache names its option; anything else is about the models.
        what = "" if isinstance(exc, CacheUnusable) else "the run's models could not be built: "
        pytest.exit(shown(f"guardbench: {what}{reason}"), returncode=pytest.ExitCode.USAGE_ERROR)
    if pending is not None and reporter is not None:
        reporter.write_line(f"guardbench: the embedded tutor is ready ({time.monotonic() - started:.0f} s)")
    state.engine = Engine(stack, prior=state.prior)


def await_record(slot: CaseSlot, state: ProcessState, progress_s: float, progress: Progress | None) -> CaseRecord:
    """This test's record: the process's queued cases go in flight first, then it waits for its own."""
    assert state.engine is not None, "the engine starts at collection end"
    schedule(state.engine, state, slot.config, slot.item.session.items, hasattr(slot.config, "workerinput"))
    return state.engine.result(slot.case, waiting_notice(slot.config, slot.case, state, progress), progress_s)


def worker_output(
    config: pytest.Config, state: ProcessState, items: list[pytest.Item], cases: dict[str, Case]
) -> dict[str, Any]:
    """What the controller learns from this worker: the cases it selected (so cases that never
    report are noticed) and its engine's counts."""
    selected = [case.case_id for case in map(case_of, items) if case is not None and case.case_id in cases]
    execution = state.execution()
    return {"selected": selected, "execution": execution.model_dump(mode="json") if execution is not None else None}


@dataclass(frozen=True)
class CaseSlot:
    """This test's case with its item and config, handed to the public fixtures so that only one
    fixture per test asks for `request`: pytest builds a new `request` fixture definition, with a
    signature inspection, each time one is asked for (bench/bench_warm_cache.py counts per-test cost)."""

    case: Case
    item: pytest.Item
    config: pytest.Config


def past_deadline(state: ProcessState, limit: float | None) -> str | None:
    """Why a case must not start (`--guardbench-max-duration` passed in this process), or None."""
    if limit is not None and time.monotonic() - state.started > limit:
        return f"not run: --guardbench-max-duration {limit:g} s reached"
    return None


def waiting_notice(
    config: pytest.Config, case: Case, state: ProcessState, progress: Progress | None
) -> Callable[[float], None] | None:
    """Called every `--guardbench-progress` seconds while a test waits for its case (a model still
    loading, a slow server), so a long wait never looks like a hang: the progress display's status
    line on a terminal, at most one line an interval without one. None in an xdist worker (its
    output reaches the terminal only through the controller)."""
    if hasattr(config, "workerinput") or progress is None:
        return None

    def notice(seconds: float) -> None:
        progress.waiting(case.case_id, seconds, state.engine.stats.done if state.engine is not None else 0)

    return notice
