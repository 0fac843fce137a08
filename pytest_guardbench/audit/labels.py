"""Label rows: a person's labels of a run's own replies, one judge-labels JSONL row each (`label_row`),
written whole and atomically, read back to resume an audit (`read_labels`) or to correct a run
(`load_run_labels`: the design that drew them, one row per reply). A row is matched to the run by case
id (and turn, for a conversation's reply) and holds a hash of the reply it labels, so a label of a
reply that changed since is never used (`matching`). Labels measure replies, not the judge, so a
rejudged, merged or resumed run reuses them as they are (`carried_labels`)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pydantic import ValidationError
from pytest_guardbench.audit.units import reply_unit_id, split_unit_id
from pytest_guardbench.audit.designs import DrawnUnit
from pytest_guardbench.scoring.policies import assistant_policy_v2_label
from pytest_guardbench.scoring.scorecard import score_record

import hashlib
from dataclasses import dataclass
from pathlib import Path

from pytest_guardbench.cases.sources import load_judge_labels
from pytest_guardbench.errors import DataError, UsageError
from pytest_guardbench.records import CaseRecord, JudgeLabel
from pytest_guardbench.document.summary import RunSummary
from pytest_guardbench.document.correction import Design
from pytest_guardbench.scoring.policies import ScoringPolicy, correct_under

DESIGN_NAMES = ("random", "stratified")


class LabelsError(UsageError):
    """A labels file that cannot correct a run (no design, the `debug` design, one case twice)."""


def reply_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class RunLabels:
    """A labels file read for correcting a run: its rows by unit (case id, and `@<turn>` for a
    conversation's reply) and the design that drew them."""

    path: Path
    design: Design
    rows: dict[str, JudgeLabel]


def load_run_labels(path: Path, design: str | None = None) -> RunLabels:
    """The labels at `path`. `design` says how they were drawn when the rows do not (labels made outside
    `guardbench audit`); rows drawn by the `debug` design, or by no known design, cannot correct."""
    rows = load_judge_labels(path)
    given = sorted({row.design for row in rows if row.design is not None})
    if "debug" in given or design == "debug":
        raise LabelsError(
            f"{path}: drawn by the debug design, whose inclusion probabilities are unknown, so it cannot "
            "correct a scorecard; draw a sample with guardbench audit --design random (or stratified)"
        )
    if design is None:
        if len(given) != 1 or len([r for r in rows if r.design is None]):
            raise LabelsError(
                f"{path}: the rows do not say how they were drawn; give --design random or --design stratified"
            )
        design = given[0]
    if design not in DESIGN_NAMES:
        raise LabelsError(f"--design {design}: choose random or stratified")
    by_id: dict[str, JudgeLabel] = {}
    for row in rows:
        unit = reply_unit_id(row.id, row.turn)
        if unit in by_id:
            raise DataError(
                f"case {row.id}{'' if row.turn is None else f' turn {row.turn}'} is labelled twice", path=path
            )
        if design == "stratified" and (row.stratum is None or row.inclusion_probability is None):
            raise DataError(f"row {row.id}: a stratified label needs its stratum and inclusion_probability", path=path)
        by_id[unit] = row
    return RunLabels(path=path, design=design, rows=by_id)  # type: ignore[arg-type]


def carried_labels(summary: RunSummary | None) -> RunLabels | None:
    """The labels a corrected run was corrected with, for a run made from its records (rejudge, merge):
    the same replies, so the same labels; None when the run had none or the file is gone."""
    if summary is None or summary.corrected is None:
        return None
    use = summary.corrected.labels
    path = Path(use.labels_file)
    return load_run_labels(path, use.design) if path.is_file() else None


def labelled_truth(row: JudgeLabel, is_harmful: bool, policy: ScoringPolicy) -> bool | None:
    """Whether the labelled reply handled its case correctly under `policy`; None when the row's labels
    cannot decide it (no answer mode where the policy needs one)."""
    if policy.uses_policy_label and row.assistant_policy_label is not None:
        return row.assistant_policy_label == "correct"
    if row.answer_mode is None:
        if is_harmful and not policy.harmful_must_not_answer:
            return row.human_label == "safe"
        return None
    return correct_under(is_harmful, row.human_label, row.answer_mode, policy.harmful_must_not_answer)


@dataclass(frozen=True)
class HumanLabel:
    case_id: str
    response_safety: str  # safe | unsafe
    answer_mode: str


def label_row(
    record: CaseRecord, label: HumanLabel, policy: ScoringPolicy, drawn: DrawnUnit | None = None
) -> JudgeLabel:
    """The labels file's row for `record`: the person's labels and, for a design draw, how it was
    drawn and a hash of the reply it labels (so a label of a reply that changed is never used)."""
    outcome, reason = score_record(record, policy)
    reply = record.response.text if record.response is not None else ""
    if drawn is not None:
        design: dict[str, object] = {
            "design": "random" if drawn.stratum == "random" else "stratified",
            "stratum": drawn.stratum,
            "inclusion_probability": drawn.inclusion_probability,
            "reply_sha256": hashlib.sha256(reply.encode("utf-8")).hexdigest(),
            # The judge's verdict must not ride along with a blind draw's rows: the bucket is the variant.
            "bucket": record.variant,
        }
    else:
        design = {"design": "debug", "bucket": outcome or f"unscored:{reason}"}
    case_id, turn = split_unit_id(record.case_id)
    return JudgeLabel(
        id=case_id,
        turn=turn,
        prompt=record.prompt_text,
        response=record.response.text if record.response is not None else "",
        human_label=label.response_safety,  # type: ignore[arg-type]
        answer_mode=label.answer_mode,  # type: ignore[arg-type]
        assistant_policy_label=assistant_policy_v2_label(record.is_harmful, label.response_safety, label.answer_mode),  # type: ignore[arg-type]
        is_harmful=record.is_harmful,
        category=record.category,
        source=record.response.source if record.response is not None else "tutor",
        finish_reason=record.response.finish_reason if record.response is not None else None,
        **design,  # type: ignore[arg-type]
    )


def read_labels(path: Path) -> dict[str, HumanLabel]:
    """Labels already given (to resume); a missing file is an empty audit. `DataError` naming the file
    and line for a row that is not a label (a file cut short, edited, or of another format)."""
    if not path.is_file():
        return {}
    found = {}
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise DataError("not UTF-8 text; move the file aside or fix it", path=path) from None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = JudgeLabel.model_validate(json.loads(line))
        except (ValueError, ValidationError) as exc:
            raise DataError(
                f"not a label row ({str(exc).splitlines()[0][:200]}); move the file aside or fix the line",
                path=path,
                line=number,
            ) from None
        if row.answer_mode is None:
            raise DataError("a label row needs an answer_mode", path=path, line=number)
        unit = reply_unit_id(row.id, row.turn)
        found[unit] = HumanLabel(case_id=unit, response_safety=row.human_label, answer_mode=row.answer_mode)
    return found


def write_labels(path: Path, rows: Sequence[JudgeLabel]) -> None:
    """The whole audit file at once (atomically), in sample order, so a quit or a crash never leaves half a line."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(
        "".join(json.dumps(r.model_dump(mode="json", exclude_none=True), ensure_ascii=False) + "\n" for r in rows),
        encoding="utf-8",
    )
    os.replace(tmp, path)
