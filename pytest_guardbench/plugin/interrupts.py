"""Stopping a run by signal. SIGTERM (what CI runners, `timeout` and container stops send) is taken as
Ctrl-C: pytest stops, the reports are written and marked incomplete, and the exit status is 2. A
second Ctrl-C or SIGTERM while that happens exits 2 at once, without writing more: the person (or
runner) asked twice.

Once the reports are being written (the tests are over), a first signal does not break the writing off
half way: the reports are finished as they stand and the run exits 2. A second one still exits 2 at once."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

SECOND_INTERRUPT_EXIT = 2  # pytest's ExitCode.INTERRUPTED, the status the README documents


class InterruptHandler:
    """Installed for the controller (or the single process) from configure to unconfigure."""

    def __init__(self) -> None:
        self.received: list[str] = []
        self._previous: dict[int, Any] = {}
        self._finishing = False
        self.while_finishing = False  # whether a signal came once the reports were being written

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.received.append(signal.Signals(signum).name)
        if len(self.received) > 1:
            self._say(f"{self.received[-1]} again: stopping now without finishing the reports (exit 2)")
            os._exit(SECOND_INTERRUPT_EXIT)
        if self._finishing:
            # A KeyboardInterrupt here would end in a traceback in the middle of the writes.
            self.while_finishing = True
            self._say(f"{self.received[-1]}: finishing the reports, then exit 2 (again to stop at once)")
            return
        raise KeyboardInterrupt

    def finishing(self) -> None:
        """The tests are over and the reports are being written: from now on until `uninstall`, a first
        signal is noted rather than raised."""
        self._finishing = True

    @staticmethod
    def _say(line: str) -> None:
        sys.stderr.write(f"\nguardbench: {line}\n")
        sys.stderr.flush()

    def install(self) -> bool:
        """Only the main thread may set handlers (an embedding program may run pytest elsewhere)."""
        if threading.current_thread() is not threading.main_thread():
            return False
        for signum in (signal.SIGINT, signal.SIGTERM):
            self._previous[signum] = signal.signal(signum, self)
        return True

    def uninstall(self) -> None:
        for signum, previous in self._previous.items():
            restore: Callable[..., Any] | int = previous if previous is not None else signal.SIG_DFL
            signal.signal(signum, restore)
        self._previous.clear()
