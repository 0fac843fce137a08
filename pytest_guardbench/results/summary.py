"""The one typed shape of a finished run's `summary.json`, shared by every writer (a pytest session,
`merge`, `rejudge`, `import-seed`) and reader (`compare`, baselines, notebooks), and the notebook
entry points `load_run` and `load_results`."""

from __future__ import annotations

import json
from pathlib import Path
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from pytest_guardbench.records import CaseRecord
from pytest_guardbench.scoring.gates import GateResult

if TYPE_CHECKING:
    import pandas

SUMMARY_SCHEMA_VERSION = 1


class Completeness(BaseModel):
    """Whether every selected case was measured; `reasons` says why not."""

    model_config = ConfigDict(frozen=True)

    complete: bool = True
    reasons: list[str] = Field(default_factory=list)


Card = dict[str, Any]  # one scorecard: counts and rates, see scoring.Scorecard


class RunSummary(BaseModel):
    """summary.json. Blocks a run may or may not have (a baseline, judge quality, a snapshot) are
    optional; a block added by a later version is kept as it is (`extra="allow"`)."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = SUMMARY_SCHEMA_VERSION
    completeness: Completeness = Field(default_factory=Completeness)  # older summaries: no block, read as complete
    run: dict[str, Any]
    stack: dict[str, Any]
    selection: dict[str, Any]
    thresholds: dict[str, Any]
    metric_definitions: dict[str, Any]
    scorecards: dict[str, Card]
    per_variant: dict[str, dict[str, Card]]
    per_family: dict[str, dict[str, Card]] = Field(default_factory=dict)
    per_category: dict[str, dict[str, Card]] = Field(default_factory=dict)
    flip_rates: dict[str, dict[str, Any]] = Field(default_factory=dict)
    variant_families: dict[str, str] = Field(default_factory=dict)
    prompt_row_buckets: dict[str, Any] = Field(default_factory=dict)
    guard_decisions: dict[str, Any] = Field(default_factory=dict)
    coverage: dict[str, Any]
    outcomes: dict[str, int] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    guard_sweeps: dict[str, Any] = Field(default_factory=dict)
    gate: GateResult
    judge_quality: dict[str, Any] | None = None
    confidence: dict[str, Any] | None = None
    baseline: dict[str, Any] | None = None
    scorecard_snapshot: dict[str, Any] | None = None

    @property
    def policy(self) -> str:
        return str(self.metric_definitions.get("policy", "refusal"))

    def as_json(self) -> dict[str, Any]:
        """The document as written to summary.json (absent optional blocks left out)."""
        absent = {
            k for k in ("judge_quality", "confidence", "baseline", "scorecard_snapshot") if getattr(self, k) is None
        }
        return self.model_dump(mode="json", exclude=absent)


def load_run(run_dir: Path | str) -> RunSummary:
    """The summary of a finished run folder (`reports/<run-id>`)."""
    path = Path(run_dir) / "summary.json"
    if not path.is_file():
        raise FileNotFoundError(f"{run_dir}: no summary.json (expected a finished reports/<run-id> folder)")
    return RunSummary.model_validate(json.loads(path.read_text(encoding="utf-8")))


RESULT_COLUMNS = {
    "case_id": "string", "pack": "string", "item_id": "string", "base_prompt_id": "string", "variant": "string", "variant_family": "string", "sample_index": "Int64",
    "category": "string", "is_harmful": "boolean", "label_source": "string", "prompt_text": "string", "guard_status": "string",
    "guard_score": "Float64", "tutor_ran": "boolean", "response_source": "string", "response_text": "string", "response_model": "string",
    "finish_reason": "string", "answer_mode": "string", "response_safety": "string", "judge_malformed": "boolean", "error_stage": "string",
    "error_message": "string",
}  # fmt: skip


def _row(record: CaseRecord) -> dict[str, Any]:
    guard, response, verdict, error = record.guard, record.response, record.judge, record.error
    return {
        "case_id": record.case_id, "pack": record.pack, "item_id": record.item_id, "base_prompt_id": record.base_prompt_id,
        "variant": record.variant, "variant_family": record.variant_family, "sample_index": record.sample_index, "category": record.category, "is_harmful": record.is_harmful,
        "label_source": record.label_source, "prompt_text": record.prompt_text,
        "guard_status": guard.status if guard else None, "guard_score": guard.score if guard else None, "tutor_ran": record.tutor_ran,
        "response_source": response.source if response else None, "response_text": response.text if response else None,
        "response_model": response.model if response else None, "finish_reason": response.finish_reason if response else None,
        "answer_mode": verdict.answer_mode if verdict else None, "response_safety": verdict.response_safety if verdict else None,
        "judge_malformed": verdict.malformed if verdict else None,
        "error_stage": error.stage if error else None, "error_message": error.message if error else None,
    }  # fmt: skip


_CASE_ID_KEY = '"case_id": "'


def _case_id_of_line(line: str) -> str | None:
    """The case id of a results.jsonl line without parsing the whole record (lines are written with
    sorted keys by `CaseRecord.json_line`; anything else is parsed)."""
    start = line.find(_CASE_ID_KEY)
    if start >= 0:
        start += len(_CASE_ID_KEY)
        end = line.find('"', start)
        if end > start and "\\" not in line[start:end]:
            return line[start:end]
    try:
        value = json.loads(line).get("case_id")
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    with path.open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if line.strip():
                yield lineno, line


def _parsed(path: Path, lineno: int, line: str) -> CaseRecord:
    try:
        return CaseRecord.model_validate_json(line)
    except ValueError as exc:
        raise ValueError(f"{path}: line {lineno}: not a case record ({str(exc).splitlines()[0]})") from None


def iter_records(run_dir: Path | str) -> Iterator[CaseRecord]:
    """The records of a run (its results.jsonl) one at a time; the last line for a case id wins (a
    first pass finds which lines those are, so only one record is held at a time)."""
    path = Path(run_dir) / "results.jsonl"
    last: dict[str, int] = {}
    repeated = False
    for lineno, line in _lines(path):
        case_id = _case_id_of_line(line)
        if case_id is not None:
            repeated = repeated or case_id in last
            last[case_id] = lineno
    for lineno, line in _lines(path):
        if repeated:
            case_id = _case_id_of_line(line)
            if case_id is not None and last.get(case_id) != lineno:
                continue
        yield _parsed(path, lineno, line)


def record_ids(run_dir: Path | str) -> set[str]:
    """The case ids in a run's results.jsonl, without parsing the records."""
    path = Path(run_dir) / "results.jsonl"
    return {case_id for _, line in _lines(path) if (case_id := _case_id_of_line(line)) is not None}


def records_with_ids(path: Path, wanted: set[str]) -> dict[str, CaseRecord]:
    """The records of the given case ids in a results.jsonl (the last line of each), parsing only those."""
    found: dict[str, CaseRecord] = {}
    if not wanted:
        return found
    for lineno, line in _lines(path):
        if _case_id_of_line(line) in wanted:
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


def load_results(run_dir: Path | str) -> pandas.DataFrame:
    """One row per case of a run's results.jsonl, with typed (nullable) columns: see RESULT_COLUMNS.
    Outcomes under a policy come from `scoring.classify`; this is the raw record, flattened."""
    import pandas

    frame = pandas.DataFrame([_row(r) for r in load_records(run_dir)], columns=list(RESULT_COLUMNS))
    return frame.astype(RESULT_COLUMNS)
