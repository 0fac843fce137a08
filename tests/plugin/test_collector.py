"""A run of cases moves its long-lived objects out of the garbage collector's passes (`plugin.collector`),
in its only process or in an xdist controller and each of its workers, and a pytest run inside
another's test leaves the outer process's collector as it found it."""

from __future__ import annotations

import json

import pytest

from tests.conftest import write_project

# Notes, after every other unconfigure hook, how many objects the collector was told to leave alone.
# Each process (the only one or the controller as "main", a worker by its id) notes it in its own file.
FREEZE_COUNT = """
import gc, json, os, pytest


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    with open(f"freeze_count_{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.json", "w") as handle:
        json.dump(gc.get_freeze_count(), handle)
"""


def _frozen_after(pytester: pytest.Pytester, *args: str) -> dict[str, int]:
    write_project(pytester)
    (pytester.path / "conftest.py").write_text((pytester.path / "conftest.py").read_text() + FREEZE_COUNT)
    result = pytester.runpytest_subprocess(*(args or ("-p", "no:xdist")))
    assert result.ret == 1, result.stdout.str()  # the small pack's gate fails: h2 and s2 are mishandled
    return {
        path.stem.removeprefix("freeze_count_"): json.loads(path.read_text())
        for path in pytester.path.glob("freeze_count_*.json")
    }


def test_a_run_of_its_own_freezes_what_lives_until_its_end(pytester, monkeypatch):
    monkeypatch.delenv("PYTEST_CURRENT_TEST")  # the child is then a run of its own, as from a terminal
    frozen = _frozen_after(pytester)
    assert list(frozen) == ["main"] and frozen["main"] > 0


def test_an_xdist_controller_and_its_workers_freeze_too(pytester, monkeypatch):
    # The controller keeps every worker's reports until it ends: unfrozen, the collector's passes at
    # its end walked them all (half a second of a 1,000-case `-n 2` run, bench/bench_issue44.py).
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    frozen = _frozen_after(pytester, "-n", "2")
    assert sorted(frozen) == ["gw0", "gw1", "main"]
    assert all(count > 0 for count in frozen.values()), frozen


def test_a_run_inside_another_s_test_leaves_the_collector_alone(pytester):
    # The child inherits this test's PYTEST_CURRENT_TEST, as a run inside another's test sees it.
    assert _frozen_after(pytester) == {"main": 0}
