"""Progress of a long run, written so that pytest's rows of dots stay whole.

On a terminal: one status line under the current row of dots, drawn with relative cursor moves and
cleared before pytest writes anything, so a dot row is never split. Without a terminal (CI logs): a
plain line at most every `--guardbench-progress` seconds, written only at the start of a line; a row
still in progress is first closed with its [NN%], as pytest closes a row when the file changes.
Runs on the controller, which sees every worker's reports under xdist."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from typing import Any

import pytest


# A wait polled every interval comes back a hair early now and then; it still gets its line.
INTERVAL_SLACK = 0.95


def eta_seconds(remaining: int, done: int, elapsed: float) -> float | None:
    """Seconds left at the measured rate (`done` cases in `elapsed` seconds), or None before any
    rate is known or when nothing remains."""
    if remaining <= 0 or done <= 0 or elapsed <= 0:
        return None
    return remaining / (done / elapsed)


def duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds + 0.5), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def progress_text(received: int, total: int, done: int, elapsed: float, errors: int) -> str:
    """`received` counts every case with a record; the rate is `done` cases in `elapsed` seconds,
    over cases run in this run only (a resumed run's reused cases arrive at once and would make the
    rate, and so the ETA, meaningless)."""
    rate = f", {done / elapsed:.1f} cases/s" if done > 0 and elapsed > 0 else ""
    eta = eta_seconds(total - received, done, elapsed)
    left = f", about {duration(eta)} left" if eta is not None else ""
    return f"guardbench: {received}/{total} cases{rate}, {errors} errors{left}"


class Progress:
    """The controller's progress display, registered as a plugin so that it can clear its terminal
    status line around everything the terminal reporter writes."""

    def __init__(self, config: pytest.Config, every_s: float, clock: Callable[[], float] = time.perf_counter) -> None:
        self.config = config
        self.every_s = every_s
        self._clock = clock
        self.started = clock()
        self._last_line = self.started  # the first plain line comes one interval in
        self._testing_since: float | None = (
            None  # the first test's start: collection and xdist's start-up are not case work
        )
        self._terminal: Any = None  # the terminal reporter, known from the session's start
        self._in_report = False  # the terminal reporter is about to write: draw after it, not now
        self._text = ""
        self._shown = False  # the terminal status line is on the screen

    # -- what is shown ----------------------------------------------------------------------
    def update(self, received: int, total: int, fresh: int, errors: int) -> None:
        """A case reported (called before the terminal reporter writes its letter); `fresh` of the
        `received` cases were run in this run."""
        if self.every_s <= 0:
            return
        now = self._clock()
        elapsed = now - (self._testing_since if self._testing_since is not None else self.started)
        self._text = progress_text(received, total, fresh, elapsed, errors)
        self._show(now)

    def waiting(self, case_id: str, seconds: float, done: int) -> None:
        """A test has waited `seconds` for its own case (single process: a model loading, a slow server)."""
        if self.every_s <= 0:
            return
        self._text = f"guardbench: waiting {duration(seconds)} for {case_id} ({done} cases done in this process)"
        reporter = self._reporter()
        if reporter is None:
            return
        capture = self.config.pluginmanager.get_plugin("capturemanager")
        if capture is None:
            self._show(self._clock())
            return
        # The test's output capture is on while its fixture waits; the line goes past it, as live logging does.
        with capture.global_and_fixture_disabled():
            self._show(self._clock())

    def _reporter(self) -> Any:
        return self._terminal

    def _tty(self, reporter: Any) -> bool:
        return bool(getattr(reporter, "isatty", False) and reporter._tw.hasmarkup)

    def _show(self, now: float) -> None:
        reporter = self._reporter()
        if reporter is None:
            return
        if self._tty(reporter):
            if not self._in_report:
                self._draw(reporter)
        elif now - self._last_line >= self.every_s * INTERVAL_SLACK:
            self._line(reporter)
            self._last_line = now

    # -- no terminal: whole lines -------------------------------------------------------------
    def _line(self, reporter: Any) -> None:
        tw = reporter._tw
        dots = self.config.get_verbosity() <= 0 and getattr(reporter, "_show_progress_info", False)
        if not dots:
            reporter.write_line(self._text)
            return
        if tw.width_of_current_line > 0:
            # Close the row with its [NN%] first, so every row stays a whole row.
            reporter._write_progress_information_filling_space()
            tw.line()
        # The reporter's current file is left as it is: the next dots go on at the start of a row.
        tw.line(self._text)
        tw.flush()

    # -- a terminal: one status line under the row --------------------------------------------
    def _draw(self, reporter: Any) -> None:
        tw = reporter._tw
        text = self._text[: max(tw.fullwidth - 1, 0)]
        column = tw.width_of_current_line
        back = f"\x1b[{column}C" if column else ""
        # Down to the next line (a new one at the bottom of the screen), clear it, write, then back
        # up to the row's column; write_raw leaves the writer's idea of the current line alone.
        tw.write_raw(f"\n\x1b[2K{text}\x1b[1A\r{back}", flush=True)
        self._shown = True

    def hide(self) -> None:
        if not self._shown:
            return
        self._shown = False
        reporter = self._reporter()
        if reporter is not None:
            reporter._tw.write_raw("\x1b[1B\x1b[2K\x1b[1A", flush=True)

    def _redraw(self) -> None:
        reporter = self._reporter()
        if reporter is not None and self._text and self._tty(reporter):
            self._draw(reporter)

    def pytest_sessionstart(self) -> None:
        self._terminal = self.config.pluginmanager.get_plugin("terminalreporter")

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_logstart(self) -> Generator[None]:
        if self._testing_since is None:
            self._testing_since = self._clock()
        was_shown = self._shown
        self.hide()
        yield
        if was_shown:
            self._redraw()

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_logreport(self) -> Generator[None]:
        self.hide()
        self._in_report = True
        try:
            yield
        finally:
            self._in_report = False
        self._redraw()

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtestloop(self) -> Generator[None, object, object]:
        # trylast: inside the terminal reporter's wrapper, so the line is gone before it writes [100%].
        result = yield
        self.hide()
        self._text = ""
        return result

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        self.hide()
        self._text = ""
