"""A pytest plugin for benchmarks: notes when each phase of a run begins and ends on
CLOCK_MONOTONIC (shared by every process on a Linux machine) and writes them, as JSON, to the file
named by BENCH_PHASES when pytest unconfigures. Loaded with `-p _phases` and `bench/` on PYTHONPATH.

Every process (the controller, the only process, each xdist worker) also writes the CPU seconds it
had used at each mark (its own, not its children's) to BENCH_PHASES + ".<who>.cpu" (who: "main" or
the worker's id), for a split of where a distributed run's CPU goes."""

from __future__ import annotations

import json
import os
import time

import pytest

_marks: dict[str, float] = {}
_cpu: dict[str, float] = {}


def _mark(name: str, again: bool = False) -> None:
    if again or name not in _marks:
        _marks[name] = time.monotonic()
        times = os.times()
        _cpu[name] = times.user + times.system


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    _mark("configure")


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    _mark("session start")


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> None:
    _mark("collection")


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    _mark("test loop")  # after pytest_collection_finish, where guardbench starts its engine


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logfinish(nodeid: str) -> None:
    _mark("last test done", again=True)


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session: pytest.Session) -> object:
    _mark("finish")  # a wrapper: before every plugin's own session finish
    return (yield)


@pytest.hookimpl(tryfirst=True)
def pytest_terminal_summary(terminalreporter: object) -> None:
    _mark("terminal summary")


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    _mark("unconfigure")
    target = os.environ.get("BENCH_PHASES")
    if not target:
        return
    if not hasattr(config, "workerinput"):
        with open(target, "w") as file:
            json.dump(_marks, file)
    who = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(f"{target}.{who}.cpu", "w") as file:
        json.dump({"marks": _marks, "cpu": _cpu}, file)
