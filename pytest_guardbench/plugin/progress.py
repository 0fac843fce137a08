"""Progress of a long run, written so that pytest's rows of dots stay whole.

On a terminal: one status line under the current row of dots, drawn with relative cursor moves and
cleared before pytest writes anything, so a dot row is never split. Without a terminal (CI logs): a
plain line at most every `--guardbench-progress` seconds, written only at the start of a line; a row
still in progress is first closed with its [NN%], as pytest closes a row when the file changes.
Runs on the controller, which sees every worker's reports under xdist.

The rate and ETA come from this run's observed throughput after its warm-up (`Throughput`), or are not
shown. A test waiting on its case with nothing moving gets a line only each time the stall doubles.
The clock is a parameter, so all of it is tested without waiting."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Mapping

import pytest

from pytest_guardbench._util.terminal import shown
from pytest_guardbench.records import Case, CaseRecord


# A wait polled every interval comes back a hair early now and then; it still gets its line.
INTERVAL_SLACK = 0.95
# An ETA only from this run's observed throughput: this many units done, over this many seconds,
# after the first arrival (which ends the warm-up: models loading, a server's first call). An ETA
# from the first case alone once read "about 167m49s left" in a run that finished in 33 s.
MIN_ETA_UNITS = 5
MIN_ETA_WINDOW_S = 10.0
# Units that arrive within this long of the first one came with it (one batch): warm-up too.
FIRST_BURST_S = 1.0


def eta_seconds(remaining: int, done: int, elapsed: float) -> float | None:
    """Seconds left at the measured rate (`done` cases in `elapsed` seconds), or None before any
    rate is known or when nothing remains."""
    if remaining <= 0 or done <= 0 or elapsed <= 0:
        return None
    return remaining / (done / elapsed)


def duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds + 0.5), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def progress_text(
    received: int, total: int, done: int, elapsed: float, errors: int, turns: tuple[int, int] | None = None
) -> str:
    """`received` counts every case with a record; the rate is `done` units (cases, or turns when
    `turns` = (done, to do) is given) in `elapsed` seconds of this run's observed throughput (zero
    while there is none yet: then neither rate nor ETA is shown)."""
    unit = "turns" if turns is not None else "cases"
    rate = f", {done / elapsed:.1f} {unit}/s" if done > 0 and elapsed > 0 else ""
    remaining = turns[1] - turns[0] if turns is not None else total - received
    eta = eta_seconds(remaining, done, elapsed)
    left = f", about {duration(eta)} left" if eta is not None else ""
    counted = f", {turns[0]}/{turns[1]} turns" if turns is not None else ""
    return f"guardbench: {received}/{total} cases{counted}{rate}, {errors} errors{left}"


class Throughput:
    """This run's observed rate, fed a count and a clock reading: units done since the first arrival
    (and its batch), over the time since. None until `MIN_ETA_UNITS` more units have come in at least
    `MIN_ETA_WINDOW_S` seconds, so an early guess is never shown."""

    def __init__(self) -> None:
        self._start: float | None = None  # when the warm-up (and the first batch) ended
        self._first: float | None = None
        self._base = 0  # units done by then
        self.counted = 0
        self.window = 0.0

    def observe(self, done: int, now: float) -> None:
        if done <= 0:
            return
        if self._first is None:
            self._first = now
        if now - self._first <= FIRST_BURST_S:
            self._start, self._base = now, done
        assert self._start is not None
        self.counted, self.window = done - self._base, now - self._start

    @property
    def known(self) -> bool:
        return self.counted >= MIN_ETA_UNITS and self.window >= MIN_ETA_WINDOW_S

    def rate_inputs(self) -> tuple[int, float]:
        """(units, seconds) for `progress_text`: (0, 0.0) while the rate is not known."""
        return (self.counted, self.window) if self.known else (0, 0.0)


class Progress:
    """The controller's progress display, registered as a plugin so that it can clear its terminal
    status line around everything the terminal reporter writes."""

    def __init__(self, config: pytest.Config, every_s: float, clock: Callable[[], float] = time.perf_counter) -> None:
        self.config = config
        self.every_s = every_s
        self._clock = clock
        self.started = clock()
        self._last_line = self.started  # the first plain line comes one interval in
        self._throughput = Throughput()
        self._counts = (0, 0)  # cases received, of the total, at the last report
        self._waited_on: tuple[int, tuple[int, int] | None] | None = None  # what was done at the last wait notice
        self._stall_started = 0.0  # when that last changed
        self._stall_shown = 0.0  # how long the stall was at the last waiting line written
        self._terminal: pytest.TerminalReporter | None = None  # the terminal reporter, known from the session's start
        self._in_report = False  # the terminal reporter is about to write: draw after it, not now
        self._text = ""
        self._shown = False  # the terminal status line is on the screen

    # -- what is shown ----------------------------------------------------------------------
    def update(self, received: int, total: int, fresh: int, errors: int, turns: tuple[int, int] | None = None) -> None:
        """A case reported (called before the terminal reporter writes its letter); `fresh` of the
        `received` cases were run in this run (a resumed run's reused ones say nothing of the rate).
        `turns` = (done, to do) counts a conversation run's turns, which then measure the rate."""
        if self.every_s <= 0:
            return
        now = self._clock()
        self._counts = (received, total)
        self._throughput.observe(turns[0] if turns is not None else fresh, now)
        self._text = progress_text(received, total, *self._throughput.rate_inputs(), errors, turns)
        self._show(now)

    def waiting(self, case_id: str, seconds: float, done: int, turns: tuple[int, int] | None = None) -> None:
        """A test has waited `seconds` for its own case (single process: a model loading, a slow server,
        a long conversation); `done` cases (and `turns`) are done in this process. While nothing moves,
        a plain line comes only each time the stall has doubled: never a line an interval saying nothing."""
        if self.every_s <= 0:
            return
        reporter = self._reporter()
        if reporter is None:
            return
        now = self._clock()
        if self._waited_on != (done, turns):
            self._waited_on, self._stall_started, self._stall_shown = (done, turns), now - seconds, 0.0
        stalled = now - self._stall_started
        if not self._tty(reporter) and self._stall_shown and stalled < 2 * self._stall_shown * INTERVAL_SLACK:
            return
        received, total = self._counts
        so_far = f"{received}/{total} cases, " if total else ""
        turned = f", {turns[0]}/{turns[1]} turns" if turns is not None else ""
        quiet = f"; none finished for {duration(stalled)}" if self._stall_shown else ""
        self._text = (
            f"guardbench: {so_far}waiting {duration(seconds)} for {case_id} "
            f"({done} cases{turned} done in this process{quiet})"
        )
        capture = self.config.pluginmanager.get_plugin("capturemanager")
        if capture is None:
            wrote = self._show(now)
        else:
            # The test's output capture is on while its fixture waits; the line goes past it, as live logging does.
            with capture.global_and_fixture_disabled():
                wrote = self._show(now)
        if wrote:
            self._stall_shown = max(stalled, 1e-9)

    def _reporter(self) -> pytest.TerminalReporter | None:
        return self._terminal

    def _tty(self, reporter: pytest.TerminalReporter) -> bool:
        return bool(getattr(reporter, "isatty", False) and reporter._tw.hasmarkup)

    def _show(self, now: float) -> bool:
        """Draw the status line, or write a plain line when one is due; whether either happened."""
        reporter = self._reporter()
        if reporter is None:
            return False
        if self._tty(reporter):
            if not self._in_report:
                self._draw(reporter)
            return True
        if now - self._last_line >= self.every_s * INTERVAL_SLACK:
            self._line(reporter)
            self._last_line = now
            return True
        return False

    # -- no terminal: whole lines -------------------------------------------------------------
    def _line(self, reporter: pytest.TerminalReporter) -> None:
        tw = reporter._tw
        dots = self.config.get_verbosity() <= 0 and getattr(reporter, "_show_progress_info", False)
        if not dots:
            reporter.write_line(shown(self._text))
            return
        if tw.width_of_current_line > 0:
            # Close the row with its [NN%] first, so every row stays a whole row.
            reporter._write_progress_information_filling_space()
            tw.line()
        # The reporter's current file is left as it is: the next dots go on at the start of a row.
        tw.line(shown(self._text))
        tw.flush()

    # -- a terminal: one status line under the row --------------------------------------------
    def _draw(self, reporter: pytest.TerminalReporter) -> None:
        tw = reporter._tw
        text = shown(self._text)[: max(tw.fullwidth - 1, 0)]
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


class RunCounts:
    """What the progress line counts as records arrive: the cases received of those selected, the
    fresh ones (a resumed run's reused cases say nothing of the rate) and, in a conversation run,
    the answered turns, which then measure the rate."""

    def __init__(self, progress: Progress, cases: Mapping[str, Case]) -> None:
        self.progress = progress
        self.cases = cases
        self._fresh = 0
        self._turns_done = 0
        self._turns_total: int | None = None

    def add(
        self, record: CaseRecord, prior: Mapping[str, CaseRecord], received: int, selected: set[str], errored: int
    ) -> None:
        fresh = record.case_id not in prior
        self._fresh += fresh
        if self._turns_total is None:  # the selection is known by the first record
            ids = selected or set(self.cases)
            self._turns_total = sum(
                len(self.cases[i].live_positions()) for i in ids if i in self.cases and self.cases[i].is_conversation
            )
        if record.turns and fresh:
            self._turns_done += sum(1 for turn in record.turns if turn.role == "assistant" and turn.reply is not None)
        turns = (self._turns_done, self._turns_total) if self._turns_total else None
        self.progress.update(received, len(selected) or len(self.cases), self._fresh, errored, turns)
