"""Real write failures for the tests: a file-size limit (RLIMIT_FSIZE) on a `guardbench` command in a
subprocess, a folder where a file goes, a read-only folder. Never a mock of the writer under test.

Python ignores SIGXFSZ, so a write past the limit fails with EFBIG ("File too large") as a full disk's
fails with ENOSPC: part-way through the file, after the checks before it passed."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

TEMPORARY_SUFFIXES = (".tmp",)


def guardbench_limited(
    argv: Sequence[str], limit: int | None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`guardbench ARGV` in a subprocess whose files may grow to `limit` bytes (None: no limit)."""

    def limited() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run(
        [sys.executable, "-m", "pytest_guardbench.commands.main", *argv],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        preexec_fn=limited,  # noqa: PLW1509 - the limit is set in the child only, before it runs anything
        timeout=300,
    )


# The lock file a command holds while it writes a run folder stays, empty, by design (filelock's).
LOCK_FILE = "run.lock"


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (relative path -> bytes), the lock file aside."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != LOCK_FILE
    }


def leftovers(folder: Path) -> list[str]:
    """Temporary files a writer left under `folder`."""
    return [str(p) for p in folder.rglob("*") if p.name.endswith(TEMPORARY_SUFFIXES)]


def root_writes_anywhere() -> bool:
    """Whether permission bits cannot stop this process (root): a read-only folder then proves nothing."""
    return hasattr(os, "geteuid") and os.geteuid() == 0
