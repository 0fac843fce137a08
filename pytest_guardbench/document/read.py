"""The one reader of a run folder's documents, for every command, the plugin and notebooks: its
summary.json (`load_run`), its records (`iter_records`, `load_records`, `records_with_ids`,
`record_ids`, `record_prompts`) and its other JSON documents (`read_json`, `read_json_object`).

One set of messages, each naming the file (and the line, for results.jsonl): not UTF-8, not JSON,
not a summary, a line that is not a case record. One redaction: what a summary says is redacted and
made writable on the way in, since a summary written by an older version may hold a key, or half a
surrogate pair, that a document made from it must not carry on. Records are redacted when they are
made (`CaseRecord.redacted`); a rewrite of a folder that may hold an older version's records takes
that pass again."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from pytest_guardbench._util.redact import redact_json
from pytest_guardbench.document.meta import FolderMeta, folder_meta
from pytest_guardbench.document.summary import RunSummary
from pytest_guardbench.errors import DataError, RunFolderError
from pytest_guardbench.records import CaseRecord


class SummaryMissing(RunFolderError, FileNotFoundError):
    """A folder holds no summary.json, so it is not a finished run folder."""


class SummaryInvalid(DataError):
    """A summary.json that is JSON but not a run summary; `errors` are the validation's, for callers
    that say which block is missing (a summary written by an older version)."""

    def __init__(self, message: str, *, path: Path, errors: list[ErrorDetails]) -> None:
        super().__init__(message, path=path)
        self.errors = errors


def read_json(path: Path) -> Any:
    """A JSON document of a run folder; `DataError` naming the file when it is not UTF-8 or not JSON."""
    try:
        return json.loads(path.read_bytes().decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 text (byte {exc.start})", path=path) from None
    except json.JSONDecodeError as exc:
        raise DataError(f"not valid JSON ({exc.msg})", path=path, line=exc.lineno) from None
    except RecursionError:
        raise DataError("nested too deeply", path=path) from None
    except ValueError as exc:  # a number past int()'s digit limit
        raise DataError(f"not valid JSON ({str(exc).split(';')[0]})", path=path) from None


def read_json_object(path: Path) -> dict[str, Any]:
    """A run folder's JSON object document ({} when absent), redacted; `DataError` naming the file
    when it is not a JSON object."""
    if not path.is_file():
        return {}
    document = read_json(path)
    if not isinstance(document, dict):
        raise DataError("not a JSON object", path=path)
    cleaned: dict[str, Any] = redact_json(document)
    return cleaned


def read_meta(run_dir: Path | str) -> FolderMeta | None:
    """A run folder's meta.json as the writer that made it wrote it, redacted; None when it has none."""
    path = Path(run_dir) / "meta.json"
    if not path.is_file():
        return None
    return folder_meta(redact_json(read_json(path)), path)


def load_run(run_dir: Path | str) -> RunSummary:
    """The summary of a finished run folder (`reports/<run-id>`), redacted; `SummaryMissing` when it
    has none, `SummaryInvalid` when it is JSON but not a run summary."""
    path = Path(run_dir) / "summary.json"
    if not path.is_file():
        raise SummaryMissing(f"{run_dir}: no summary.json (expected a finished reports/<run-id> folder)")
    document = read_json(path)
    try:
        return RunSummary.model_validate(redact_json(document))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"])) or "the document"
        raise SummaryInvalid(f"not a run summary ({where}: {first['msg']})", path=path, errors=exc.errors()) from None


_CASE_ID_KEY = '"case_id": "'


def _case_id_of_line(line: str, path: Path, lineno: int) -> str | None:
    """The case id of a results.jsonl line without parsing the whole record (lines are written with
    sorted keys by `CaseRecord.json_line`; anything else is parsed)."""
    start = line.find(_CASE_ID_KEY)
    if start >= 0:
        start += len(_CASE_ID_KEY)
        end = line.find('"', start)
        if end > start and "\\" not in line[start:end]:
            return line[start:end]
    try:
        parsed = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(parsed, dict):
        raise DataError(f"not a case record (a JSON {type(parsed).__name__}, not an object)", path=path, line=lineno)
    value = parsed.get("case_id")
    return value if isinstance(value, str) else None


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    with path.open(encoding="utf-8") as handle:
        lineno = 0
        try:
            for lineno, line in enumerate(handle, start=1):
                if line.strip():
                    yield lineno, line
        except UnicodeDecodeError as exc:
            raise DataError(f"not UTF-8 text (byte {exc.start})", path=path, line=lineno + 1) from None


def _parsed(path: Path, lineno: int, line: str) -> CaseRecord:
    try:
        return CaseRecord.parse_json(line)
    except (ValueError, RecursionError) as exc:
        raise DataError(f"not a case record ({str(exc).splitlines()[0]})", path=path, line=lineno) from None


def iter_records(run_dir: Path | str, *, each_case_once: bool = False) -> Iterator[CaseRecord]:
    """The records of a run (its results.jsonl) one at a time; the last line for a case id wins (a
    first pass finds which lines those are, so only one record is held at a time). `each_case_once`:
    the caller knows no case has two lines (the finish reading back the file it wrote, where no case
    came twice), so the one pass that parses them is the only one."""
    path = Path(run_dir) / "results.jsonl"
    if each_case_once:
        for lineno, line in _lines(path):
            yield _parsed(path, lineno, line)
        return
    last: dict[str, int] = {}
    repeated = False
    for lineno, line in _lines(path):
        case_id = _case_id_of_line(line, path, lineno)
        if case_id is not None:
            repeated = repeated or case_id in last
            last[case_id] = lineno
    for lineno, line in _lines(path):
        if repeated:
            case_id = _case_id_of_line(line, path, lineno)
            if case_id is not None and last.get(case_id) != lineno:
                continue
        yield _parsed(path, lineno, line)


def record_ids(run_dir: Path | str) -> set[str]:
    """The case ids in a run's results.jsonl, without parsing the records."""
    path = Path(run_dir) / "results.jsonl"
    return {case_id for lineno, line in _lines(path) if (case_id := _case_id_of_line(line, path, lineno)) is not None}


def record_prompts(run_dir: Path | str) -> dict[str, str]:
    """Each case id of a run's results.jsonl -> the sha256 of its prompt text (the last line of a case
    wins), to tell runs of the same ids apart when their prompts differ; a line that is no record is
    left to the record reader's messages."""
    path = Path(run_dir) / "results.jsonl"
    found: dict[str, str] = {}
    for lineno, line in _lines(path):
        case_id = _case_id_of_line(line, path, lineno)
        try:
            prompt = json.loads(line).get("prompt_text")
        except (ValueError, RecursionError, AttributeError):
            continue
        if case_id is not None and isinstance(prompt, str):
            found[case_id] = hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()
    return found


def records_with_ids(path: Path, wanted: set[str]) -> dict[str, CaseRecord]:
    """The records of the given case ids in a results.jsonl (the last line of each), parsing only those."""
    found: dict[str, CaseRecord] = {}
    if not wanted:
        return found
    for lineno, line in _lines(path):
        if _case_id_of_line(line, path, lineno) in wanted:
            record = _parsed(path, lineno, line)
            found[record.case_id] = record
    return found


def load_records(run_dir: Path | str) -> list[CaseRecord]:
    """The records of a run (its results.jsonl) as a list; the last line for a case id wins."""
    path = Path(run_dir) / "results.jsonl"
    records: dict[str, CaseRecord] = {}
    for lineno, line in _lines(path):
        record = _parsed(path, lineno, line)
        records[record.case_id] = record
    return list(records.values())
