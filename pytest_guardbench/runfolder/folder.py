"""The run folder on disk: its id and creation, `results.jsonl` appended one whole record at a time,
and the check that reports can be written at all (made before any model is called)."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path


from pytest_guardbench.errors import RunFolderError
from pytest_guardbench.records import CaseRecord
from pytest_guardbench._util.redact import writable


def utc_now() -> datetime:
    return datetime.now(UTC)


def new_run_id(now: datetime) -> str:
    """Sortable and unique: two runs in the same second differ by the random suffix."""
    return f"{now.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"


def make_run_dir(report_dir: Path, now: datetime) -> tuple[str, Path]:
    report_dir.mkdir(parents=True, exist_ok=True)
    while True:
        run_id = new_run_id(now)
        run_dir = report_dir / run_id
        try:
            run_dir.mkdir()
        except FileExistsError:
            continue
        return run_id, run_dir


class ReportWriteError(RunFolderError, OSError):
    """The run folder cannot take another record (a full disk, a folder gone read-only)."""


class ResultsWriter:
    """Appends one JSON line per finished case to results.jsonl and flushes it at once, so a killed
    run keeps every case that finished. A write that fails part-way is cut back to the last whole
    line: a resume must never meet half a record."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def write(self, record: CaseRecord) -> None:
        line = record.json_line()
        try:
            data = line.encode("utf-8")
        except UnicodeEncodeError:
            # A lone surrogate has no UTF-8 form (and its JSON escape is no valid record either): U+FFFD,
            # as the record pass (`CaseRecord.redacted`) would have made it.
            data = writable(line).encode("utf-8")
        try:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            elif os.fstat(self._fd).st_nlink == 0:
                # The folder or the file was deleted under the run: writing on would keep nothing.
                raise ReportWriteError(
                    errno.ENOENT,
                    f"{self.path}: removed while the run was writing it; "
                    f"the record of {record.case_id} and those after it are not kept",
                )
            end = os.lseek(self._fd, 0, os.SEEK_END)
            written = 0
            try:
                while written < len(data):
                    written += os.write(self._fd, data[written:])
            except OSError:
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, end)
                raise
        except ReportWriteError:
            raise
        except OSError as exc:
            raise ReportWriteError(
                exc.errno,
                f"{self.path}: cannot write the record of {record.case_id} ({exc.strerror}); "
                "the file keeps every case written before it",
            ) from None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def writable_problem(report_dir: Path) -> str | None:
    """Why reports cannot be written under `report_dir`, found before any model is called; None when they can."""
    created = [
        d for d in (report_dir, *report_dir.parents) if not d.exists()
    ]  # removed again: a check leaves nothing behind
    try:
        report_dir.mkdir(parents=True, exist_ok=True)
        probe = report_dir / f".guardbench-probe-{secrets.token_hex(4)}"
        with probe.open("wb") as handle:
            handle.write(b"x" * 4096)
            handle.flush()
            os.fsync(handle.fileno())
        probe.unlink()
    except OSError as exc:
        return f"--guardbench-report-dir {report_dir}: cannot write reports there ({exc.strerror or exc})"
    finally:
        for folder in created:
            with contextlib.suppress(OSError):
                folder.rmdir()
    return None


@contextlib.contextmanager
def removed_on_failure(out: Path) -> Iterator[Path]:
    """A new run folder that is removed again when writing it fails part-way (a corrupt input line met
    late, a judge that fails mid-way, a full disk): a command leaves a whole folder or none."""
    existed = out.exists()
    try:
        yield out
    except BaseException:
        if not existed:
            shutil.rmtree(out, ignore_errors=True)
        raise
