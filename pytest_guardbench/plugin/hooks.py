"""pytest11 entry point: options, markers, parametrisation and the report hooks. The public fixtures
live in `fixtures`, the controller's work in `session.GuardbenchSession`."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_guardbench._util.terminal import shown
from pytest_guardbench.plugin import hookspecs
from pytest_guardbench.plugin.configure import MARKERS, add_options, is_worker
from pytest_guardbench.plugin.keys import FROZEN_KEY, INPUTS_KEY, PROCESS_KEY, RECORD_KEY, SCORE_KEY, SESSION_KEY
from pytest_guardbench.plugin.wire import RECORD_ATTR, SCORE_ATTR, SLOT_FIXTURE, WORKER_OUTPUT_KEY

if TYPE_CHECKING:
    from pytest_guardbench.plugin.interrupts import InterruptHandler
    from pytest_guardbench.records import Case

# Only what registering the plugin needs is imported here; each hook imports the rest when it runs.
# Every pytest run in an environment where guardbench is installed imports this module, and most
# of the package (settings, cases, the run, the finish) is needed only by a run with cases.


# A pytest run has no --design: rows that do not say how they were drawn are labelled again, or say it.
LABELS_DESIGN = (
    "--guardbench-labels (guardbench_labels) takes rows that say it: label a draw with guardbench audit, or add "
    '"design": "random" (or "stratified" with each row\'s stratum and inclusion_probability) to every row'
)

# The public fixtures, registered with this entry-point module (pytest loads what a plugin names here).
pytest_plugins = ["pytest_guardbench.plugin.fixtures", "pytest_guardbench.plugin.collector"]
ATTACHED_KEY = pytest.StashKey[bool]()
INTERRUPTS_KEY: pytest.StashKey[InterruptHandler] = pytest.StashKey()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def names_data(config: pytest.Config) -> bool:
    """Whether the run names prompt data (`--guardbench-data` or the `guardbench_data` ini key)."""
    return bool(config.getoption("guardbench_data") or config.getini("guardbench_data"))


def pytest_configure(config: pytest.Config) -> None:
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)
    if not names_data(config) and not config.getoption("guardbench_list"):
        # No prompt data: no case to run, so nothing is loaded or checked (every pytest run of an
        # environment with guardbench installed configures the plugin). A test that asks for a case
        # stops collection with the one line that says so (`pytest_generate_tests`).
        return
    configure_run(config)


def configure_run(config: pytest.Config) -> None:
    """Settings, inputs, the controller's checks and this process's run objects, into `config.stash`."""
    from pytest_guardbench._util.redact import redact
    from pytest_guardbench.audit.label_files import load_run_labels
    from pytest_guardbench.cases.sources import label_conflict_warning
    from pytest_guardbench.errors import GuardbenchError
    from pytest_guardbench.exit_status import ExitStatus
    from pytest_guardbench.plugin.configure import check_before_cases, registered_units, spawns_workers
    from pytest_guardbench.plugin.interrupts import InterruptHandler
    from pytest_guardbench.plugin.session import GuardbenchSession
    from pytest_guardbench.plugin.xdist_bridge import XdistBridge
    from pytest_guardbench.run.inputs import load_inputs
    from pytest_guardbench.run.preflight import PreflightInBackground
    from pytest_guardbench.run.process import ProcessState, start_call_processes
    from pytest_guardbench.run.stack import will_use_call_processes
    from pytest_guardbench.runfolder.resume import load_base
    from pytest_guardbench.settings.config import Settings

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


def pytest_unconfigure(config: pytest.Config) -> None:
    interrupts = config.stash.get(INTERRUPTS_KEY, None)
    if interrupts is not None:
        interrupts.uninstall()
        del config.stash[INTERRUPTS_KEY]
    state = config.stash.get(PROCESS_KEY, None)
    if state is not None:
        state.close()
    session = config.stash.get(SESSION_KEY, None)
    if session is not None:
        session.release()
        config.pluginmanager.unregister(session)
        config.pluginmanager.unregister(session.progress)
        bridge = config.pluginmanager.get_plugin("guardbench-xdist-bridge")
        if bridge is not None:
            config.pluginmanager.unregister(bridge)
        del config.stash[SESSION_KEY]


def pytest_cmdline_main(config: pytest.Config) -> int | None:
    if not config.getoption("guardbench_list"):
        return None
    from pytest_guardbench.plugin.console import listing

    config._do_configure()
    state = config.stash[PROCESS_KEY]
    lines = listing(state.units, Path(config.rootpath))
    print("\n".join(lines))
    config._ensure_unconfigure()
    return 0


def pytest_report_header(config: pytest.Config) -> str | None:
    inputs = config.stash.get(INPUTS_KEY, None)
    if inputs is None or not inputs.cases:
        return None
    from pytest_guardbench.plugin.console import header_line

    return header_line(inputs)


def _marks(case: Case) -> list[pytest.MarkDecorator]:
    label = "harmful" if case.is_harmful else "harmless" if case.is_harmful is False else "unlabelled"
    return [
        pytest.mark.guardbench(
            pack=case.pack, variant=case.variant, harmful=case.is_harmful, category=(case.category or "").lower()
        ),
        getattr(pytest.mark, label),
    ]


NO_DATA = "guardbench: no prompt data; pass --guardbench-data PATH or set the guardbench_data ini key"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if SLOT_FIXTURE not in metafunc.fixturenames:
        return
    inputs = metafunc.config.stash.get(INPUTS_KEY, None)
    if inputs is None or not inputs.data.sources:
        # Known only now (a project without guardbench tests needs no data); a CollectError shows as
        # its one line, and `pytest_sessionfinish` turns pytest's "interrupted" (2) into a usage error (4).
        raise pytest.Collector.CollectError(NO_DATA)
    params = [pytest.param(case, id=case.case_id, marks=_marks(case)) for case in inputs.cases]
    metafunc.parametrize(SLOT_FIXTURE, params, indirect=True)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build the stack and start the engine once the cases are known, before the first test."""
    config = session.config
    state = config.stash.get(PROCESS_KEY, None)
    if state is None or state.engine is not None or config.option.collectonly:
        return
    from pytest_guardbench.plugin.collector import freeze_long_lived, may_freeze
    from pytest_guardbench.plugin.worker import case_of, start_engine

    if not any(case_of(item) for item in session.items):
        return
    run_session = config.stash.get(SESSION_KEY, None)
    start_engine(session, state, config.stash[INPUTS_KEY], run_session.abandon if run_session else lambda: None)
    config.stash[FROZEN_KEY] = may_freeze()
    freeze_long_lived(config)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if RECORD_KEY in item.stash and not item.stash.get(ATTACHED_KEY, False):
        record, scored = item.stash[RECORD_KEY], item.stash[SCORE_KEY]
        run_session = item.config.stash.get(SESSION_KEY, None)
        if run_session is not None:
            # This process finishes the run: the record reaches it as it is, with no trip through
            # JSON and no second validation, which every case of a replay paid (bench/bench_fixed_costs.py).
            run_session.hand_over(report.nodeid, record, scored)
        else:
            setattr(report, RECORD_ATTR, record.model_dump(mode="json"))
            setattr(report, SCORE_ATTR, [*scored])
        item.stash[ATTACHED_KEY] = True
        # Handed over: the item no longer keeps it, so each record is freed with its test's fixtures
        # rather than kept until the process ends (a run's every record would then be walked by each
        # of the collector's full passes, pytest's two at the end among them).
        del item.stash[RECORD_KEY]
        del item.stash[SCORE_KEY]
    return report


def _only_no_data(config: pytest.Config) -> bool:
    """Whether the run's errors are all the no-data collection error (an xdist controller's terminal
    reporter holds each worker's failed collection reports too)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    stats = getattr(reporter, "stats", {})
    errors = stats.get("error", [])
    return bool(errors) and not stats.get("failed") and all(NO_DATA in str(getattr(e, "longrepr", "")) for e in errors)


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if session.exitstatus in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.TESTS_FAILED) and _only_no_data(config):
        session.exitstatus = pytest.ExitCode.USAGE_ERROR  # no data is a usage error, not an interruption
    if not is_worker(config) or INPUTS_KEY not in config.stash:
        return
    from pytest_guardbench.plugin.worker import worker_output

    output = worker_output(config, config.stash[PROCESS_KEY], session.items, config.stash[INPUTS_KEY].cases_by_id)
    config.workeroutput[WORKER_OUTPUT_KEY] = {"schema": 1, **output}  # type: ignore[attr-defined]
