"""The run folder on disk: its id and creation, `results.jsonl` appended one whole record at a time,
and the check that reports can be written at all (made before any model is called)."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
from collections.abc import Iterator
from typing import BinaryIO
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


# A span of results.jsonl: where a line starts, and its length in bytes.
Span = tuple[int, int]


class ResultsWriter:
    """Appends one JSON line per finished case to results.jsonl. `add` takes a record into the
    batch, `flush` writes the batch with one `os.write`, so the lines of records that finish together
    cost one system call; a caller flushes before anyone is told that a case finished (the pytest
    session before the test's report is logged), so a killed run keeps every finished case. A write
    that fails part-way, or is stopped part-way (Ctrl-C between two parts of a long write), is cut back
    to the last whole line: a resume must never meet half a record.

    No fsync per batch: the lines are in the kernel's page cache once `os.write` returns, and a killed
    process (SIGKILL, the OOM killer, a crash) loses none of them; only a power loss or a kernel crash
    could, which is outside the promise. `close` (the end of a run, and an interrupted run's finish)
    syncs the file once (docs/explanation/execution.md)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._end = 0  # the file's size after the last flush: where the next line starts
        self._batch: list[bytes] = []
        self._batch_size = 0
        self._first_case: str | None = None  # the batch's first case, named when it cannot be written

    @property
    def pending_bytes(self) -> int:
        """Bytes taken by `add` and not written yet."""
        return self._batch_size

    def add(self, record: CaseRecord) -> Span:
        """Take `record`'s line into the batch; where it will lie in the file once flushed."""
        line = record.json_line()
        try:
            data = line.encode("utf-8")
        except UnicodeEncodeError:
            # A lone surrogate has no UTF-8 form (and its JSON escape is no valid record either): U+FFFD,
            # as the record pass (`CaseRecord.redacted`) would have made it.
            data = writable(line).encode("utf-8")
        if not self._batch:
            self._first_case = record.case_id
        span = (self._end + self._batch_size, len(data))
        self._batch.append(data)
        self._batch_size += len(data)
        return span

    def write(self, record: CaseRecord) -> None:
        """Append `record` now: `add` and `flush`."""
        self.add(record)
        self.flush()

    def flush(self) -> None:
        """Write the batch, whole lines or nothing; `ReportWriteError` when the file cannot take it
        (the batch is dropped: the file keeps every line written before it)."""
        if not self._batch:
            return
        data = b"".join(self._batch) if len(self._batch) > 1 else self._batch[0]
        first = self._first_case
        self._batch, self._batch_size, self._first_case = [], 0, None
        try:
            self._append(data, first)
        except ReportWriteError:
            raise
        except OSError as exc:
            raise ReportWriteError(
                exc.errno,
                f"{self.path}: cannot write the record of {first} ({exc.strerror}); "
                "the file keeps every case written before it",
            ) from None

    def check_kept(self, case_id: str) -> None:
        """`ReportWriteError` when the file was removed since `case_id`'s line was written (ahead of
        its test's report): one fstat, as a write would have made."""
        if self._fd is not None:
            self._status(case_id)

    def _status(self, first: str | None) -> os.stat_result:
        assert self._fd is not None
        status = os.fstat(self._fd)
        if status.st_nlink == 0:
            # The folder or the file was deleted under the run: writing on would keep nothing.
            raise ReportWriteError(
                errno.ENOENT,
                f"{self.path}: removed while the run was writing it; "
                f"the record of {first} and those after it are not kept",
            )
        return status

    def _append(self, data: bytes, first: str | None) -> None:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        # One fstat per batch: the file's end (where a failed write is cut back to) and whether it is
        # still there.
        end = self._status(first).st_size
        written = 0
        try:
            while written < len(data):
                written += os.write(self._fd, data[written:] if written else data)
        except BaseException:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, end)
            raise
        self._end = end + written

    def discard(self, spans: list[Span]) -> None:
        """Take lines back out of the file (lines written ahead for cases whose tests never reported):
        cut off when they are its last lines, as they are when a run stops early; else the file is
        rewritten without them."""
        self.flush()
        if not spans or self._fd is None:
            return
        spans = sorted(spans)
        tail = spans[0][0]
        if all(start + size == following for (start, size), (following, _) in zip(spans, spans[1:])) and (
            spans[-1][0] + spans[-1][1] == self._end
        ):
            os.ftruncate(self._fd, tail)
            self._end = tail
            return
        self._rewrite_without(spans)

    def _rewrite_without(self, spans: list[Span]) -> None:
        assert self._fd is not None
        kept = self.path.with_name(self.path.name + ".tmp")
        with self.path.open("rb") as source, kept.open("wb") as target:
            at = 0
            for start, size in [*spans, (self._end, 0)]:
                source.seek(at)
                shutil.copyfileobj(_Limited(source, start - at), target)
                at = start + size
            target.flush()
            os.fsync(target.fileno())
        os.close(self._fd)
        self._fd = None
        os.replace(kept, self.path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        self._end = os.fstat(self._fd).st_size

    def sync(self) -> None:
        """Write the batch and ask the disk to keep the file (the end of a run, an interruption)."""
        self.flush()
        if self._fd is not None:
            with contextlib.suppress(OSError):  # a file system that cannot sync still has the lines
                os.fsync(self._fd)

    def close(self) -> None:
        """Write the batch, sync the file once and close it."""
        try:
            self.sync()
        finally:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


class _Limited:
    """The next `size` bytes of a binary file, for `shutil.copyfileobj`."""

    def __init__(self, source: BinaryIO, size: int) -> None:
        self._source = source
        self._left = size

    def read(self, size: int = -1) -> bytes:
        if self._left <= 0:
            return b""
        chunk = self._source.read(self._left if size < 0 else min(size, self._left))
        self._left -= len(chunk)
        return chunk


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
