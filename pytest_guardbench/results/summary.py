"""The one typed shape of a finished run's `summary.json`, shared by every writer (a pytest session,
`merge`, `rejudge`, `import-seed`) and reader (`compare`, baselines, notebooks), and the notebook
entry points `load_run` and `load_results`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pytest_guardbench.errors import DataError, RunFolderError
from pytest_guardbench.records import (
    AnswerMode,
    CaseRecord,
    GuardStatus,
    LabelSource,
    PipelineStage,
    ResponseSafety,
    ResponseSource,
)
from pytest_guardbench.scoring.blocks import (
    Confidence,
    Correction,
    Execution,
    GivenKeysBlock,
    JudgeQuality,
    RunMetrics,
    Usage,
)
from pytest_guardbench.scoring.baselines import BaselineComparison
from pytest_guardbench.scoring.gates import GateResult
from pytest_guardbench.scoring.policies import DEFAULT_POLICY, ScoringPolicy, policy_named, policy_of_summary
from pytest_guardbench.scoring.scorecard import score_record
from pytest_guardbench.settings.config import Thresholds

if TYPE_CHECKING:
    import pandas

SUMMARY_SCHEMA_VERSION = 1


class Completeness(BaseModel):
    """Whether every selected case was measured; `reasons` says why not."""

    model_config = ConfigDict(frozen=True)

    complete: bool = True
    reasons: list[str] = Field(default_factory=list)


class RunInfo(GivenKeysBlock):
    """Everything that depends on time or the run id (two runs over the same input differ only
    here), and where a rescored run came from. `execution`: per-process engine, cache and call
    counters, added up over the processes; an open set that grows with the engine."""

    run_id: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    duration_s: float | None = None
    worker_crashes: list[str] = Field(default_factory=list)
    internal_errors: list[str] = Field(default_factory=list)
    execution: Execution = Field(default_factory=Execution)
    usage: Usage | None = None
    rejudged_from: str | None = None
    imported_from: str | None = None
    merged_from: list[str] = Field(default_factory=list)
    judge: str | None = None


class StackInfo(GivenKeysBlock):
    """What was measured: the three roles and the settings that change their answers."""

    guardrail: str | None = None
    tutor: str | None = None
    judge: str | None = None
    judge_id: str | None = None  # the identity of the judge the records name (`run.judge_quality.judge_id`)
    malformed_policy: str | None = None
    policy: str | None = None
    system_prompt: str | None = None
    samples: int | None = None
    judge_samples: int | None = None  # written only when the judge was asked more than once
    max_new_tokens: int | None = None
    variants: list[str] = Field(default_factory=list)


class Selection(GivenKeysBlock):
    """Which cases the run selected (a merge also names the shards it holds)."""

    keyword: str | None = None
    markexpr: str | None = None
    selected_cases: int | None = None
    total_cases: int | None = None
    partial: bool | None = None
    shard: str | None = None
    merged_shards: list[str] = Field(default_factory=list)
    absent_shards: list[str] = Field(default_factory=list)


class SnapshotCheck(GivenKeysBlock):
    """The committed scorecard file the run was held to (`stored`), or that it wrote (`written`)."""

    path: str
    tolerance: float
    stored: dict[str, Any] | None = None  # the file as committed: people edit it
    written: bool | None = None


class RunSummary(RunMetrics):
    """summary.json: the run's metrics (`RunMetrics`) and what the finish step adds. Blocks a run may
    or may not have (a baseline, judge quality, a snapshot) are optional; a plugin's own blocks
    (`pytest_guardbench_summary`) go under `extensions`, kept as they are."""

    model_config = ConfigDict(frozen=True)

    schema_version: int = SUMMARY_SCHEMA_VERSION
    completeness: Completeness = Field(default_factory=Completeness)  # older summaries: no block, read as complete
    run: RunInfo
    stack: StackInfo
    selection: Selection
    thresholds: Thresholds
    gate: GateResult
    judge_quality: JudgeQuality | None = None
    confidence: Confidence | None = None
    baseline: BaselineComparison | None = None
    scorecard_snapshot: SnapshotCheck | None = None
    corrected: Correction | None = None  # the scorecards corrected by a person's labels of this run's replies
    extensions: dict[str, Any] = Field(default_factory=dict)  # blocks of plugins, by name

    @property
    def judge_id(self) -> str | None:
        """The identity of the judge that labelled the run: the one its records name or, in a run
        written before records named it, the one its judge check measured; None when unknown."""
        checked = self.judge_quality.judge_id if self.judge_quality is not None else None
        return self.stack.judge_id or checked

    def as_json(self) -> dict[str, Any]:
        """The document as written to summary.json (absent optional blocks left out)."""
        absent = {
            k
            for k in ("judge_quality", "confidence", "baseline", "scorecard_snapshot", "corrected")
            if getattr(self, k) is None
        }
        if not self.extensions:
            absent.add("extensions")
        return self.model_dump(mode="json", exclude=absent)


class SummaryMissing(RunFolderError, FileNotFoundError):
    """A folder holds no summary.json, so it is not a finished run folder."""


def load_run(run_dir: Path | str) -> RunSummary:
    """The summary of a finished run folder (`reports/<run-id>`); SummaryMissing when it has none."""
    path = Path(run_dir) / "summary.json"
    if not path.is_file():
        raise SummaryMissing(f"{run_dir}: no summary.json (expected a finished reports/<run-id> folder)")
    try:
        return RunSummary.model_validate(read_json_file(path))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"])) or "document"
        raise SummaryInvalid(f"not a run summary: {where}: {first['msg']}", path=path, errors=exc.errors()) from None


class SummaryInvalid(DataError):
    """A summary.json that is JSON but not a run summary; `errors` are the validation's, for callers
    that say which block is missing (a summary written by an older version)."""

    def __init__(self, message: str, *, path: Path, errors: list[Any]) -> None:
        super().__init__(message, path=path)
        self.errors = errors


def read_json_file(path: Path) -> Any:
    """A JSON document from a run folder; `DataError` naming the file when it is not UTF-8 or not JSON."""
    try:
        return json.loads(path.read_bytes().decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 text (byte {exc.start})", path=path) from None
    except json.JSONDecodeError as exc:
        raise DataError(f"not valid JSON ({exc.msg})", path=path, line=exc.lineno) from None
    except ValueError as exc:  # a number past int()'s digit limit
        raise DataError(f"not valid JSON ({str(exc).split(';')[0]})", path=path) from None
    except RecursionError:
        raise DataError("nested too deeply", path=path) from None


@dataclass(frozen=True)
class ResultColumn:
    """One column of `load_results`: its pandas dtype and what it holds."""

    name: str
    dtype: str
    meaning: str


# Closed sets (the records' literals) are categoricals with fixed categories, so a value a run never
# produced still counts (as 0) in a groupby and two runs' frames concatenate without turning into objects.
RESULT_CATEGORIES: dict[str, tuple[str, ...]] = {
    "label_source": get_args(LabelSource),
    "guard_status": get_args(GuardStatus),
    "response_source": get_args(ResponseSource),
    "answer_mode": get_args(AnswerMode),
    "response_safety": get_args(ResponseSafety),
    "error_stage": get_args(PipelineStage),
    "outcome": ("TP", "FP", "TN", "FN"),
    "unscored_reason": ("error", "unlabelled", "judge_malformed", "judge_incomplete"),
}

RESULT_COLUMNS: tuple[ResultColumn, ...] = (
    ResultColumn("case_id", "string", "the case: `<pack>.<item>.<variant>`, with a sample suffix when k > 1"),
    ResultColumn("pack", "category", "the pack or dataset the prompt came from"),
    ResultColumn("item_id", "string", "the prompt's id in its pack"),
    ResultColumn("base_prompt_id", "string", "the prompt the variant was made from"),
    ResultColumn("variant", "category", "the variant (mutator or chain) applied to the prompt"),
    ResultColumn("variant_family", "category", "the variant's family"),
    ResultColumn("sample_index", "Int64", "which of the k samples of the case"),
    ResultColumn("category", "category", "the prompt's harm category"),
    ResultColumn("is_harmful", "boolean", "the prompt's label; <NA> when unlabelled"),
    ResultColumn("label_source", "category", "where the label came from"),
    ResultColumn("prompt_text", "string", "the prompt as sent"),
    ResultColumn("guard_status", "category", "allow, block or malformed; <NA> without a guardrail or after an error"),
    ResultColumn("guard_score", "Float64", "the guard's P(risk), when it gives one"),
    ResultColumn("tutor_ran", "boolean", "whether the tutor was asked"),
    ResultColumn("response_source", "category", "tutor, or guard_block (the block message)"),
    ResultColumn("response_text", "string", "the final response"),
    ResultColumn("response_model", "category", "the model that wrote the response"),
    ResultColumn("finish_reason", "category", "why the tutor stopped (`length`: cut off by the token limit)"),
    ResultColumn("answer_mode", "category", "the judge's answer mode"),
    ResultColumn("response_safety", "category", "the judge's safe or unsafe"),
    ResultColumn("judge_malformed", "boolean", "the judge's reply could not be used as given"),
    ResultColumn("judge_reason", "string", "the judge's reason"),
    ResultColumn("error_stage", "category", "the stage that failed: guard, tutor or judge"),
    ResultColumn("error_message", "string", "the error"),
    ResultColumn(
        "turns", "Int64", "a conversation's depth: the user turns the system answered; <NA> for a single prompt"
    ),
    ResultColumn("first_unsafe_turn", "Int64", "a conversation's first turn with a reply judged unsafe"),
    ResultColumn("outcome", "category", "TP, FP, TN or FN under the run's policy (summary.json); <NA> when unscored"),
    ResultColumn(
        "unscored_reason", "category", "why a case has no outcome: error, unlabelled, judge_malformed, judge_incomplete"
    ),
)


def _row(record: CaseRecord, policy: ScoringPolicy) -> dict[str, Any]:
    guard, response, verdict, error = record.guard, record.response, record.judge, record.error
    outcome, reason = score_record(record, policy)
    return {
        "case_id": record.case_id,
        "pack": record.pack,
        "item_id": record.item_id,
        "base_prompt_id": record.base_prompt_id,
        "variant": record.variant,
        "variant_family": record.variant_family,
        "sample_index": record.sample_index,
        "category": record.category,
        "is_harmful": record.is_harmful,
        "label_source": record.label_source,
        "prompt_text": record.prompt_text,
        "guard_status": guard.status if guard else None,
        "guard_score": guard.score if guard else None,
        "tutor_ran": record.tutor_ran,
        "response_source": response.source if response else None,
        "response_text": response.text if response else None,
        "response_model": response.model if response else None,
        "finish_reason": response.finish_reason if response else None,
        "answer_mode": verdict.answer_mode if verdict else None,
        "response_safety": verdict.response_safety if verdict else None,
        "judge_malformed": verdict.malformed if verdict else None,
        "judge_reason": verdict.reason if verdict else None,
        "error_stage": error.stage if error else None,
        "error_message": error.message if error else None,
        "turns": max(t.depth for t in record.turns) if record.turns else None,
        "first_unsafe_turn": record.first_unsafe_turn,
        "outcome": outcome,
        "unscored_reason": reason,
    }


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
        parsed = json.loads(line)
    except ValueError:
        return None
    value = parsed.get("case_id") if isinstance(parsed, dict) else None
    return value if isinstance(value, str) else None


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    with path.open(encoding="utf-8") as handle:
        lineno = 0
        try:
            for lineno, line in enumerate(handle, start=1):
                if line.strip():
                    yield lineno, line
        except UnicodeDecodeError:
            raise DataError("not UTF-8 text", path=path, line=lineno + 1) from None


def _parsed(path: Path, lineno: int, line: str) -> CaseRecord:
    try:
        return CaseRecord.model_validate_json(line)
    except ValueError as exc:
        raise DataError(f"{path}: line {lineno}: not a case record ({str(exc).splitlines()[0]})") from None


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


def run_policy(run_dir: Path | str) -> ScoringPolicy:
    """The policy a run was scored under (its summary.json); a folder without one is read under the default."""
    path = Path(run_dir) / "summary.json"
    if not path.is_file():
        return policy_named(DEFAULT_POLICY)
    document = read_json_file(path)
    if not isinstance(document, dict):
        raise DataError("not a run summary (not a JSON object)", path=path)
    return policy_named(policy_of_summary(document))


def load_results(run_dir: Path | str, policy: ScoringPolicy | None = None) -> pandas.DataFrame:
    """One row per case of a run's results.jsonl (the last line of a case wins), with the columns and
    nullable dtypes of RESULT_COLUMNS; `outcome` is the case's cell under `policy`, by default the
    run's own (its summary.json)."""
    import pandas

    policy = policy or run_policy(run_dir)
    frame = pandas.DataFrame([_row(r, policy) for r in load_records(run_dir)], columns=[c.name for c in RESULT_COLUMNS])
    dtypes = {
        c.name: pandas.CategoricalDtype(RESULT_CATEGORIES[c.name]) if c.name in RESULT_CATEGORIES else c.dtype
        for c in RESULT_COLUMNS
    }
    return frame.astype(dtypes)
