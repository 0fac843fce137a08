"""A run's cases as one table for notebooks and scripts: `load_results` gives one row per case of a
run's results.jsonl, with the columns and nullable dtypes of `RESULT_COLUMNS` and each case's cell
under the run's policy (read by `run_policy`)."""

from __future__ import annotations

from pytest_guardbench.document.read import load_records
from pytest_guardbench.document.read import read_json

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, get_args


from pytest_guardbench.errors import DataError
from pytest_guardbench.records import (
    AnswerMode,
    CaseRecord,
    GuardStatus,
    LabelSource,
    PipelineStage,
    ResponseSafety,
    ResponseSource,
)
from pytest_guardbench.scoring.policies import DEFAULT_POLICY, ScoringPolicy, policy_named, policy_of_summary
from pytest_guardbench.scoring.scorecard import score_record

if TYPE_CHECKING:
    import pandas


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


def _row(record: CaseRecord, policy: ScoringPolicy) -> dict[str, object]:
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


def run_policy(run_dir: Path | str) -> ScoringPolicy:
    """The policy a run was scored under (its summary.json); a folder without one is read under the default."""
    path = Path(run_dir) / "summary.json"
    if not path.is_file():
        return policy_named(DEFAULT_POLICY)
    document = read_json(path)
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
