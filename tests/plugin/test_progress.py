"""Progress lines: whole lines between whole rows of dots, at most one per interval, ETA from the rate."""

from __future__ import annotations

import re

import pytest

from pytest_guardbench.plugin.progress import eta_seconds, progress_text
from tests.conftest import SCRIPTED_TUTOR_CONFTEST, write_project

SLOW_TUTOR = """
import time

class SlowTutor(ScriptedTutor):
    def generate(self, conversations, params, seeds):
        time.sleep(float(os.environ.get("GUARDBENCH_TEST_SLOW", "0")))
        return super().generate(conversations, params, seeds)

_register_scripted = pytest_guardbench_register_providers

def pytest_guardbench_register_providers(registry):
    _register_scripted(registry)
    registry.register("slow", lambda options: SlowTutor(), "Scripted tutor that sleeps per batch (tests only).")
"""
VARIANTS = "original,typo,keyboard,doubled,camouflage,leet-light,leet-heavy,homoglyph,zero-width,spaced,case-noise"
ROW = re.compile(r"^(test_suite\.py )?[.xF]*\s+\[\s*\d+%\]$")


def test_eta_is_the_remaining_cases_at_the_measured_rate():
    assert eta_seconds(remaining=30, done=10, elapsed=5.0) == pytest.approx(15.0)
    assert eta_seconds(remaining=0, done=10, elapsed=5.0) is None
    assert eta_seconds(remaining=30, done=0, elapsed=5.0) is None
    text = progress_text(received=50, total=80, done=20, elapsed=10.0, errors=1)
    assert text == "guardbench: 50/80 cases, 2.0 cases/s, 1 errors, about 15s left"
    # Reused cases count as received (fewer remain) but not in the rate.
    assert progress_text(received=70, total=80, done=0, elapsed=0.0, errors=0) == "guardbench: 70/80 cases, 0 errors"


def _run_lines(pytester: pytest.Pytester, *args: str) -> list[str]:
    write_project(pytester, ini=f"guardbench_variants = {VARIANTS}\nguardbench_tutor = slow\n")
    pytester.makeconftest(SCRIPTED_TUTOR_CONFTEST + SLOW_TUTOR)
    result = pytester.runpytest_subprocess(*args, "--guardbench-min-recall=0", "--guardbench-max-fpr=1")
    assert result.ret == 0, result.stdout.str()
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if line.startswith(("collected", "2 workers"))) + 1
    end = next(i for i, line in enumerate(lines) if "guardbench ===" in line)
    return [line for line in lines[start:end] if line.strip()]


@pytest.mark.parametrize("dist", [["-p", "no:xdist"], ["-n", "2"]], ids=["no_xdist", "n2"])
def test_progress_lines_never_split_a_row_of_dots(pytester, monkeypatch, dist):
    monkeypatch.setenv("GUARDBENCH_TEST_SLOW", "0.02")
    lines = _run_lines(
        pytester, *dist, "--guardbench-progress=0.2", "--guardbench-concurrency=1", "--guardbench-batch-size=1"
    )
    progress = [line for line in lines if line.startswith("guardbench: ")]
    assert progress, lines
    assert all(ROW.match(line) for line in lines if not line.startswith("guardbench: ")), lines
    assert all(re.match(r"guardbench: \d+/66 cases", line) for line in progress)


def test_a_long_wait_prints_one_line_per_interval(pytester, monkeypatch):
    monkeypatch.setenv("GUARDBENCH_TEST_SLOW", "1.5")
    lines = _run_lines(pytester, "-p", "no:xdist", "--guardbench-progress=0.5", "-o", "guardbench_variants=original")
    waiting = [line for line in lines if "waiting" in line]
    assert 1 <= len(waiting) <= 1.5 / 0.5 + 1, lines  # about one an interval, never one per poll
    assert all(ROW.match(line) for line in lines if not line.startswith("guardbench: ")), lines
