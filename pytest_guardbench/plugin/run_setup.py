"""A run's set-up in each process, once pytest is configured with prompt data: its settings, inputs
and labels, the controller's checks before any case (the preflight), the call processes, and this
process's run objects in `config.stash`. Imported by `pytest_configure` only when the run names data."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_guardbench._util.redact import redact
from pytest_guardbench._util.terminal import shown
from pytest_guardbench.audit.label_files import load_run_labels
from pytest_guardbench.cases.sources import label_conflict_warning
from pytest_guardbench.errors import GuardbenchError
from pytest_guardbench.exit_status import ExitStatus
from pytest_guardbench.plugin.configure import check_before_cases, is_worker, registered_units, spawns_workers
from pytest_guardbench.plugin.interrupts import InterruptHandler
from pytest_guardbench.plugin.keys import INPUTS_KEY, INTERRUPTS_KEY, PROCESS_KEY, SESSION_KEY
from pytest_guardbench.plugin.session import GuardbenchSession
from pytest_guardbench.plugin.xdist_bridge import XdistBridge
from pytest_guardbench.run.inputs import load_inputs
from pytest_guardbench.run.preflight import PreflightInBackground
from pytest_guardbench.run.process import ProcessState, start_call_processes
from pytest_guardbench.run.stack import will_use_call_processes
from pytest_guardbench.runfolder.resume import load_base
from pytest_guardbench.settings.config import Settings

# A pytest run has no --design: rows that do not say how they were drawn are labelled again, or say it.
LABELS_DESIGN = (
    "--guardbench-labels (guardbench_labels) takes rows that say it: label a draw with guardbench audit, or add "
    '"design": "random" (or "stratified" with each row\'s stratum and inclusion_probability) to every row'
)


def configure_run(config: pytest.Config) -> None:
    """Settings, inputs, the controller's checks and this process's run objects, into `config.stash`."""
    pending_preflight: PreflightInBackground | None = None
    units = registered_units(config)
    try:
        settings = Settings.from_pytest(config)
        inputs = load_inputs(Path(config.rootpath), settings, units)
        call_processes = None
        try:
            distributed = is_worker(config) or spawns_workers(config)
            processes = will_use_call_processes(inputs, distributed)
            if processes and not config.option.collectonly and not config.getoption("guardbench_list"):
                # Started first, so they import the API client while this process asks the models and
                # collects.
                call_processes = start_call_processes(processes)
            if not is_worker(config) and not config.option.collectonly and not config.getoption("guardbench_list"):
                pending_preflight = check_before_cases(config, inputs)
            # After the preflight: the state's clock is the one --guardbench-max-duration is counted on.
            state = ProcessState(units=units, call_processes=call_processes)
            labels = (
                load_run_labels(list(settings.labels), how_to_give_design=LABELS_DESIGN)
                if settings.labels and not is_worker(config)
                else None
            )
            session = None if is_worker(config) else GuardbenchSession(config, inputs, labels, pending_preflight)
        except BaseException:
            if call_processes is not None:
                call_processes.close()  # call processes started above must not outlive a run that never began
            raise
    except GuardbenchError as exc:
        # Any other error guardbench raises on purpose before a case runs (a missing extra, a run folder
        # in use, a model that cannot be reached) is about the input: exit 4, one line. A broken
        # promise inside guardbench stays a bug.
        if exc.exit_status == ExitStatus.INTERNAL_ERROR:
            raise
        raise pytest.UsageError(shown(redact(f"guardbench: {exc}"))) from None
    except OSError as exc:
        if exc.filename is None:
            raise
        raise pytest.UsageError(shown(redact(f"guardbench: {exc.filename}: {exc.strerror or exc}"))) from None
    conflicts = label_conflict_warning(inputs.data.items)
    if conflicts and not is_worker(config):
        config.issue_config_time_warning(pytest.PytestWarning(shown(redact(f"guardbench: {conflicts}"))), stacklevel=2)
    if settings.resume is not None:
        # The controller folded the folder's finished cases into resume_base.jsonl before any worker started.
        state.prior = session.folder.prior if session is not None else load_base(settings.resume)
    config.stash[INPUTS_KEY] = inputs
    config.stash[PROCESS_KEY] = state
    if session is not None:
        session.process = state
        config.stash[SESSION_KEY] = session
        interrupts = InterruptHandler()
        if interrupts.install():
            config.stash[INTERRUPTS_KEY] = interrupts
        config.pluginmanager.register(session, "guardbench-session")
        config.pluginmanager.register(session.progress, "guardbench-progress")
        # "xdist" as an installed entry point, "xdist.plugin" when named with -p (autoloading off).
        if config.pluginmanager.hasplugin("xdist") or config.pluginmanager.hasplugin("xdist.plugin"):
            config.pluginmanager.register(XdistBridge(session), "guardbench-xdist-bridge")
