"""A run of cases moves its long-lived objects out of the garbage collector's passes (`plugin.collector`),
and a pytest run inside another's test leaves the outer process's collector as it found it."""

from __future__ import annotations

import json

import pytest

from tests.conftest import write_project

# Notes, after every other unconfigure hook, how many objects the collector was told to leave alone.
FREEZE_COUNT = """
import gc, json, pytest


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    with open("freeze_count.json", "w") as handle:
        json.dump(gc.get_freeze_count(), handle)
"""


def _frozen_after(pytester: pytest.Pytester) -> int:
    write_project(pytester)
    (pytester.path / "conftest.py").write_text((pytester.path / "conftest.py").read_text() + FREEZE_COUNT)
    result = pytester.runpytest_subprocess("-p", "no:xdist")
    assert result.ret == 1, result.stdout.str()  # the small pack's gate fails: h2 and s2 are mishandled
    count: int = json.loads((pytester.path / "freeze_count.json").read_text())
    return count


def test_a_run_of_its_own_freezes_what_lives_until_its_end(pytester, monkeypatch):
    monkeypatch.delenv("PYTEST_CURRENT_TEST")  # the child is then a run of its own, as from a terminal
    assert _frozen_after(pytester) > 0


def test_a_run_inside_another_s_test_leaves_the_collector_alone(pytester):
    # The child inherits this test's PYTEST_CURRENT_TEST, as a run inside another's test sees it.
    assert _frozen_after(pytester) == 0
