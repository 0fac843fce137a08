"""One writer per run folder: the process that runs (or resumes) a run holds `run.lock` in its folder
until the run is written; a second process on the same folder stops at once with one line naming the
holder. The lock is the operating system's (filelock), so a killed holder releases it and leaves
nothing to clean up; `run.lock.holder` only says who holds it."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from pathlib import Path
from types import TracebackType

from filelock import FileLock, Timeout

from pytest_guardbench._util.files import write_files
from pytest_guardbench.runfolder.resume import ResumeError

LOCK_FILE = "run.lock"
HOLDER_FILE = "run.lock.holder"


class RunFolderLock:
    """Held from the start of a run to the end of its writing; `release` is idempotent."""

    def __init__(self, run_dir: Path, then: str = "resume") -> None:
        self.run_dir = run_dir
        self.then = then  # what the refused process's user does once the folder is free
        self._lock = FileLock(str(run_dir / LOCK_FILE))

    def acquire(self) -> RunFolderLock:
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            raise ResumeError(
                f"{self.run_dir}: another process is writing this run folder ({holder_of(self.run_dir)}); "
                f"wait for it to finish or stop it, then {self.then}"
            ) from None
        holder = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.strftime("%Y-%m-%d %H:%M:%S")}
        # Only says who holds the lock: a full disk or a read-only folder leaves it unwritten ("holder
        # unknown"), and what the holder then writes names the file it cannot write.
        with contextlib.suppress(OSError):
            write_files([(self.run_dir / HOLDER_FILE, json.dumps(holder))])
        return self

    def release(self) -> None:
        if self._lock.is_locked:
            (self.run_dir / HOLDER_FILE).unlink(missing_ok=True)
            self._lock.release()

    def __enter__(self) -> RunFolderLock:
        return self.acquire()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.release()


def holder_of(run_dir: Path) -> str:
    try:
        holder = json.loads((run_dir / HOLDER_FILE).read_text(encoding="utf-8"))
        return f"pid {holder['pid']} on {holder['host']}, since {holder['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "holder unknown"


def refuse_unfinished(run_dir: Path, then: str) -> None:
    """`ResumeError` (exit 4) for a run folder a process is writing or resuming, or that has no
    summary.json yet (a run still going, or killed before it was written): its records are not the run's."""
    RunFolderLock(run_dir, then).acquire().release()
    require_summary(run_dir)


def require_summary(run_dir: Path) -> None:
    """`ResumeError` (exit 4) for a run folder without summary.json."""
    if not (run_dir / "summary.json").is_file():
        raise ResumeError(
            f"{run_dir}: no summary.json: the run is still being written, or stopped before it was; "
            "finish it (pytest --guardbench-resume) first"
        )
