"""Label rows: a person's labels of a run's own replies, one judge-labels JSONL row each (`label_row`),
written whole and atomically (`write_labels`), read back to resume an audit (`read_label_rows`). A row
is matched to the run by case id (and turn, for a conversation's reply) and holds a hash of the reply
it labels, so a label of a reply that changed since is never used (`matching`).

Every row says who labelled it (`labeller`), by which rubric (`rubric_version`) and from which draw
(`draw`: seed, size, population hash, its place in the draw order); a second labeller's row names the
file whose draw it shares (`overlap`), a settled row the two labellings it settles (`adjudicated`).
`RunLabels` is the rows one correction uses (`label_files.load_run_labels` makes it from one or more
files); labels measure replies, not the judge, so a rejudged, merged or resumed run reuses them."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from pytest_guardbench._util.files import write_files
from pytest_guardbench.audit.designs import DrawnUnit
from pytest_guardbench.audit.rubric import RUBRIC_VERSION
from pytest_guardbench.audit.units import reply_unit_id, split_unit_id
from pytest_guardbench.document.correction import Design
from pytest_guardbench.errors import DataError, UsageError
from pytest_guardbench.records import CaseRecord, JudgeLabel, LabelDraw, LabelOverlap
from pytest_guardbench.scoring.policies import ScoringPolicy, assistant_policy_v2_label, correct_under
from pytest_guardbench.scoring.scorecard import score_record


class LabelsError(UsageError):
    """Label rows that cannot correct a run, or an audit that would lose or rewrite one; the message
    names the file and what to do."""


def reply_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class RecordedDraw:
    """The draw label rows say they come from: its design, seed, size and population hash."""

    design: str
    seed: int
    size: int
    population_sha256: str

    @classmethod
    def of_row(cls, row: JudgeLabel) -> RecordedDraw | None:
        if row.draw is None or row.design is None:
            return None
        return cls(row.design, row.draw.seed, row.draw.size, row.draw.population_sha256)

    def differences(self, other: RecordedDraw) -> list[str]:
        """What differs from `other`, in words (`seed 3, not 0`); empty when the same draw."""
        said = []
        for name in ("design", "seed", "size"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine != theirs:
                said.append(f"{'sample size' if name == 'size' else name} {mine}, not {theirs}")
        if self.population_sha256 != other.population_sha256:
            said.append("another population (another run, or its replies changed)")
        return said


@dataclass(frozen=True)
class RunLabels:
    """The label rows one correction uses: one row per unit (case id, and `@<turn>` for a
    conversation's reply), the design that drew them and the draw the rows record. From several files
    (`label_files.load_run_labels`): `pairs` are two labellers' rows of one unit (their agreement),
    `settled` how many units a settled row decides, `unsettled` the units two files label differently
    with no settled row (the first file's row is used)."""

    path: Path
    design: Design
    rows: dict[str, JudgeLabel]
    paths: tuple[Path, ...] = ()
    pairs: tuple[tuple[JudgeLabel, JudgeLabel], ...] = ()
    settled: int = 0
    unsettled: tuple[str, ...] = ()
    draw: RecordedDraw | None = None

    @property
    def files(self) -> tuple[Path, ...]:
        return self.paths or (self.path,)


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
    record: CaseRecord,
    label: HumanLabel,
    policy: ScoringPolicy,
    drawn: DrawnUnit | None = None,
    *,
    labeller: str | None = None,
    draw: LabelDraw | None = None,
    overlap: LabelOverlap | None = None,
) -> JudgeLabel:
    """The labels file's row for `record`: the person's labels, who gave them by which rubric, and, for a
    design draw, how it was drawn (`drawn`, `draw`) and a hash of the reply it labels (so a label of a
    reply that changed is never used)."""
    outcome, reason = score_record(record, policy)
    reply = record.response.text if record.response is not None else ""
    if drawn is not None:
        design: dict[str, object] = {
            "design": drawn.design,
            "stratum": drawn.stratum,
            "inclusion_probability": drawn.inclusion_probability,
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
        response=reply,
        human_label=label.response_safety,  # type: ignore[arg-type]
        answer_mode=label.answer_mode,  # type: ignore[arg-type]
        assistant_policy_label=assistant_policy_v2_label(  # type: ignore[arg-type]
            record.is_harmful, label.response_safety, label.answer_mode
        ),
        is_harmful=record.is_harmful,
        category=record.category,
        source=record.response.source if record.response is not None else "tutor",
        finish_reason=record.response.finish_reason if record.response is not None else None,
        reply_sha256=reply_sha256(reply),
        rubric_version=RUBRIC_VERSION,
        labeller=labeller,
        draw=draw,
        overlap=overlap,
        **design,  # type: ignore[arg-type]
    )


def unit_of(row: JudgeLabel) -> str:
    """The unit a row labels: its case id, and `@<turn>` for a conversation's reply."""
    return reply_unit_id(row.id, row.turn)


def read_label_rows(path: Path) -> list[JudgeLabel]:
    """The rows of an audit file, to resume it; a missing file is an empty audit. `DataError` naming the
    file and line for a row that is not a label (a file cut short, edited, or of another format), a
    row without an answer mode, or a unit labelled twice."""
    if not path.is_file():
        return []
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise DataError("not UTF-8 text; move the file aside or fix it", path=path) from None
    rows: list[JudgeLabel] = []
    seen: set[str] = set()
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
        if unit_of(row) in seen:
            raise DataError(f"{unit_of(row)} is labelled twice", path=path, line=number)
        seen.add(unit_of(row))
        rows.append(row)
    return rows


def human_label(row: JudgeLabel) -> HumanLabel:
    return HumanLabel(case_id=unit_of(row), response_safety=row.human_label, answer_mode=row.answer_mode or "")


def write_labels(path: Path, rows: Sequence[JudgeLabel]) -> None:
    """The whole audit file at once (atomically), in sample order, so a quit or a crash never leaves half a
    line; the OSError of a file that cannot be written names it, and no temporary file is left."""
    text = "".join(json.dumps(r.model_dump(mode="json", exclude_none=True), ensure_ascii=False) + "\n" for r in rows)
    write_files([(path, text)])
