"""pytest11 entry point: options, markers, parametrisation and the report hooks. The public fixtures
live in `fixtures`, the controller's work in `session.GuardbenchSession`."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_guardbench.plugin import hookspecs
from pytest_guardbench.plugin.configure import MARKERS, add_options, is_worker
from pytest_guardbench.plugin.keys import (
    INPUTS_KEY,
    INTERRUPTS_KEY,
    PROCESS_KEY,
    RECORD_KEY,
    SCORE_KEY,
    SESSION_KEY,
)
from pytest_guardbench.plugin.wire import RECORD_ATTR, SCORE_ATTR, SLOT_FIXTURE, WORKER_OUTPUT_KEY

if TYPE_CHECKING:
    from pytest_guardbench.records import Case

# Only what registering the plugin needs is imported here; each hook imports the rest when it runs.
# Every pytest run in an environment where guardbench is installed imports this module, and most
# of the package (settings, cases, the run, the finish) is needed only by a run with cases.


# The public fixtures, registered with this entry-point module (pytest loads what a plugin names here).
pytest_plugins = ["pytest_guardbench.plugin.fixtures", "pytest_guardbench.plugin.collector"]
ATTACHED_KEY = pytest.StashKey[bool]()


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
    from pytest_guardbench.plugin.run_setup import configure_run

    configure_run(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    interrupts = config.stash.get(INTERRUPTS_KEY, None)
    session = config.stash.get(SESSION_KEY, None)
    if interrupts is not None:
        interrupts.uninstall()
        del config.stash[INTERRUPTS_KEY]
        if interrupts.while_finishing and session is not None:
            session.interrupted_while_finishing()  # pytest returns the status after unconfigure
    state = config.stash.get(PROCESS_KEY, None)
    if state is not None:
        state.close()
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
    from pytest_guardbench.plugin.collector import freeze_long_lived
    from pytest_guardbench.plugin.worker import case_of, start_engine

    if not any(case_of(item) for item in session.items):
        return
    run_session = config.stash.get(SESSION_KEY, None)
    start_engine(session, state, config.stash[INPUTS_KEY], run_session.abandon if run_session else lambda: None)
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
