"""Stopping a run by signal. SIGTERM (what CI runners, `timeout` and container stops send) is taken as
Ctrl-C: pytest stops, the reports are written and marked incomplete, and the exit status is 2. A
second Ctrl-C or SIGTERM while that happens exits 2 at once, without writing more: the person (or
runner) asked twice."""

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

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.received.append(signal.Signals(signum).name)
        if len(self.received) > 1:
            sys.stderr.write(
                f"\nguardbench: {self.received[-1]} again: stopping now without finishing the reports (exit 2)\n"
            )
            sys.stderr.flush()
            os._exit(SECOND_INTERRUPT_EXIT)
        raise KeyboardInterrupt

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
