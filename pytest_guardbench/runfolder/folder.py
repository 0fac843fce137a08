"""The run folder on disk: its id and creation, `results.jsonl` appended one whole record at a time,
and the check that reports can be written at all (made before any model is called)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from pytest_guardbench.errors import DataError, RunFolderError
from pytest_guardbench.records import CaseRecord
from pytest_guardbench._util.redact import redact_json, writable
from pytest_guardbench.document.summary import RunSummary
from pytest_guardbench.results.summary import iter_records, load_run, record_ids


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


def read_summary(run_dir: Path) -> RunSummary:
    """The summary of a finished run folder, or `DataError` naming its summary.json and what is wrong
    with it (not UTF-8, not JSON, not a summary); `SummaryMissing` when there is none. Its texts are
    redacted and made writable on the way in: a summary written by an older version may hold a key,
    or half a surrogate pair, that a summary made from it must not carry on."""
    path = run_dir / "summary.json"
    if not path.is_file():
        return load_run(run_dir)  # its own error: no summary.json
    try:
        document = json.loads(path.read_bytes().decode("utf-8"))
        return RunSummary.model_validate(redact_json(document))
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 text (byte {exc.start})", path=path) from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"])) or "the document"
        raise DataError(f"not a run summary ({where}: {first['msg']})", path=path) from None
    except json.JSONDecodeError as exc:
        raise DataError(f"not valid JSON ({exc.msg})", path=path, line=exc.lineno) from None
    except (ValueError, RecursionError) as exc:  # a number past int()'s digit limit, nesting past the stack
        raise DataError(f"not valid JSON ({type(exc).__name__})", path=path) from None


def _unreadable(run_dir: Path, exc: Exception) -> DataError:
    path = run_dir / "results.jsonl"
    if isinstance(exc, UnicodeDecodeError):
        return DataError(f"not UTF-8 text (byte {exc.start})", path=path)
    # results/summary.py's line reader takes every JSON line for an object (`.get`); one that is not
    # (a list, a number) is a line of something else.
    return DataError(f"a line is not a case record ({type(exc).__name__}: {exc})", path=path)


def read_records(run_dir: Path) -> Iterator[CaseRecord]:
    """`iter_records`, with a results.jsonl that is not UTF-8, or has a line that is not a JSON object,
    named as such (a line that is not a record is already named by file and line)."""
    try:
        yield from iter_records(run_dir)
    except (UnicodeDecodeError, AttributeError, TypeError) as exc:
        raise _unreadable(run_dir, exc) from None


def read_record_ids(run_dir: Path) -> set[str]:
    """`record_ids`, with the same errors as `read_records`."""
    try:
        return record_ids(run_dir)
    except (UnicodeDecodeError, AttributeError, TypeError) as exc:
        raise _unreadable(run_dir, exc) from None
