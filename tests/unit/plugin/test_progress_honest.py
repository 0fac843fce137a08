"""Honest progress, on a fake clock: the ETA comes from this run's observed throughput after its
warm-up, or is not shown; a wait with nothing moving never prints a line each interval; a run that
counts turns shows them and takes its rate from them."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from pytest_guardbench.plugin.progress import MIN_ETA_WINDOW_S, Progress, Throughput


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Writer:
    width_of_current_line = 0
    hasmarkup = False


class Reporter:
    """A terminal reporter writing plain lines (no terminal: a CI log)."""

    isatty = False
    _show_progress_info = False

    def __init__(self) -> None:
        self._tw = Writer()
        self.lines: list[str] = []

    def write_line(self, line: str) -> None:
        self.lines.append(line)


def _progress(every_s: float = 30.0) -> tuple[Progress, Clock, Reporter]:
    clock, reporter = Clock(), Reporter()
    plugins = {"terminalreporter": reporter, "capturemanager": None}
    config = SimpleNamespace(pluginmanager=SimpleNamespace(get_plugin=plugins.get), get_verbosity=lambda: 0)
    progress = Progress(config, every_s, clock=clock)  # type: ignore[arg-type]
    progress.pytest_sessionstart()
    return progress, clock, reporter


def test_no_eta_from_the_warm_up_and_then_the_observed_rate():
    # The reported run: 20 s of model loading, then 1000 cases at 10 a second (it finished in about two minutes).
    # The first case alone once gave "about 167m49s left".
    progress, clock, reporter = _progress(every_s=5)
    texts = []
    clock.now = 20.0
    progress.update(received=1, total=1000, fresh=1, errors=0)
    texts.append(progress._text)
    for done in range(2, 1001):
        clock.now = 20.0 + (done - 1) / 10
        progress.update(received=done, total=1000, fresh=done, errors=0)
        texts.append(progress._text)
    assert texts[0] == "guardbench: 1/1000 cases, 0 errors", "no rate and no ETA from the first case"
    early = [t for t in texts[: int(10 * MIN_ETA_WINDOW_S)] if "left" in t]
    assert early == [], "no ETA before the rate has been watched for a while"
    etas = [
        float(m.group(1)) * 60 + float(m.group(2)) for t in texts if (m := re.search(r"about (\d+)m(\d\d)s left", t))
    ]
    assert etas and max(etas) <= 100, "at 10 cases/s, 1000 cases never need more than 100 s"
    at_half = texts[499]
    assert "500/1000 cases, 10.0 cases/s" in at_half and "about 50s left" in at_half
    assert all(line.startswith("guardbench: ") for line in reporter.lines)


def test_a_first_batch_is_warm_up_too():
    throughput = Throughput()
    for _ in range(16):  # the first batch of 16 arrives at once after 30 s of loading
        throughput.observe(16, 30.0)
    throughput.observe(32, 40.0)  # the next 16 take 10 s
    assert throughput.known and throughput.rate_inputs() == (16, 10.0)


def test_a_stalled_wait_prints_a_line_only_as_the_stall_doubles():
    # The reported run: 26 lines of "waiting 10m00s" and no progress; here ten minutes pass with nothing done.
    progress, clock, reporter = _progress(every_s=30)
    progress.update(received=0, total=26, fresh=0, errors=0)
    for tick in range(1, 21):
        clock.now = 30.0 * tick
        progress.waiting("conv.c1.original", seconds=clock.now, done=0)
    waiting = [line for line in reporter.lines if "waiting" in line]
    assert [re.search(r"waiting (\S+)", line).group(1) for line in waiting] == [
        "30s",
        "1m00s",
        "2m00s",
        "4m00s",
        "8m00s",
    ]
    assert waiting[0] == "guardbench: 0/26 cases, waiting 30s for conv.c1.original (0 cases done in this process)"
    assert waiting[-1].endswith("(0 cases done in this process; none finished for 8m00s)"), waiting[-1]
    # Something finished: the next notice is written at once (one interval after the last line).
    clock.now += 30.0
    progress.waiting("conv.c2.original", seconds=5.0, done=1)
    assert (
        reporter.lines[-1] == "guardbench: 0/26 cases, waiting 5s for conv.c2.original (1 cases done in this process)"
    )


def test_turns_are_counted_and_measure_the_rate():
    progress, clock, _ = _progress()
    clock.now = 5.0
    progress.update(received=0, total=96, fresh=0, errors=0, turns=(10, 400))
    clock.now = 25.0
    progress.update(received=3, total=96, fresh=3, errors=0, turns=(60, 400))
    assert progress._text == "guardbench: 3/96 cases, 60/400 turns, 2.5 turns/s, 0 errors, about 2m16s left"
    progress.waiting("conv.c9.original", seconds=40.0, done=3, turns=(61, 400))
    assert "(3 cases, 61/400 turns done in this process)" in progress._text


@pytest.mark.parametrize("every_s", [0.0])
def test_progress_off_prints_nothing(every_s):
    progress, clock, reporter = _progress(every_s)
    clock.now = 100.0
    progress.update(received=1, total=2, fresh=1, errors=0)
    progress.waiting("c", seconds=100.0, done=0)
    assert reporter.lines == [] and progress._text == ""
