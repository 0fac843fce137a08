"""Settling two labellings of the same replies (`guardbench audit --adjudicate A B`): the replies both
labelled, paired (`paired`); and the settled row of each (`settled_row`): the labels both gave where
they agree, the adjudicator's where they do not, marked `adjudicated` with the two files, their
labellers and their labels. A settled file holds a row for every reply both labelled, so `correct`
takes a settled row wherever one exists."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_guardbench.audit.agreement import LabellingMismatch
from pytest_guardbench.audit.labels import LabelsError, RecordedDraw, reply_sha256, unit_of
from pytest_guardbench.audit.rubric import RUBRIC_VERSION
from pytest_guardbench.records import JudgeLabel, LabelSettlement
from pytest_guardbench.scoring.policies import assistant_policy_v2_label


@dataclass(frozen=True)
class LabelPair:
    """One reply two labellers labelled: the first file's row and the second's."""

    unit: str
    first: JudgeLabel
    second: JudgeLabel

    @property
    def agreed(self) -> bool:
        return (self.first.human_label, self.first.answer_mode) == (self.second.human_label, self.second.answer_mode)


def _order(row: JudgeLabel) -> int:
    return row.draw.position if row.draw is not None else 0


def paired(
    first: Path, first_rows: Sequence[JudgeLabel], second: Path, second_rows: Sequence[JudgeLabel]
) -> list[LabelPair]:
    """The replies both files label, in the draw's order; `LabelsError` when they share none or are of
    two draws, `LabellingMismatch` when a shared reply's text differs."""
    by_unit = {unit_of(row): row for row in second_rows}
    pairs = [LabelPair(unit_of(row), row, by_unit[unit_of(row)]) for row in first_rows if unit_of(row) in by_unit]
    if not pairs:
        raise LabelsError(f"{first} and {second} label no reply in common; give a first labelling and its overlap")
    for pair in pairs:
        if (pair.first.prompt, pair.first.response) != (pair.second.prompt, pair.second.response):
            raise LabellingMismatch(f"{first} and {second} label different text for {pair.unit}")
        mine, theirs = RecordedDraw.of_row(pair.first), RecordedDraw.of_row(pair.second)
        if mine is not None and theirs is not None and mine != theirs:
            raise LabelsError(f"{second}: of another draw than {first} ({'; '.join(theirs.differences(mine))})")
    return sorted(pairs, key=lambda pair: _order(pair.first))


def check_replies(pairs: Sequence[LabelPair], replies: Mapping[str, str], run_dir: Path, first: Path) -> None:
    """`LabelsError` when a paired reply is not a reply of the run (`replies`: unit -> its reply's sha256)."""
    for pair in pairs:
        labelled = pair.first.reply_sha256 or reply_sha256(pair.first.response)
        if replies.get(pair.unit) != labelled:
            said = "is not in" if pair.unit not in replies else "is another reply than the one in"
            raise LabelsError(f"{first}: the labelled reply of {pair.unit} {said} {run_dir}; adjudicate on its own run")


def settled_row(pair: LabelPair, labels: tuple[str, str], adjudicator: str, files: tuple[str, str]) -> JudgeLabel:
    """The settled row of `pair`: the first labelling's row (the draw's) with `labels`, by `adjudicator`."""
    base = pair.first if pair.first.overlap is None else pair.second
    safety, mode = labels
    return base.model_copy(
        update={
            "human_label": safety,
            "answer_mode": mode,
            "assistant_policy_label": assistant_policy_v2_label(base.is_harmful, safety, mode),
            "labeller": adjudicator,
            "rubric_version": RUBRIC_VERSION,
            "overlap": None,
            "note": None,
            "adjudicated": LabelSettlement(
                of=files,
                labellers=(pair.first.labeller, pair.second.labeller),
                labels=(
                    (pair.first.human_label, pair.first.answer_mode),
                    (pair.second.human_label, pair.second.answer_mode),
                ),
                agreed=pair.agreed,
            ),
        }
    )


def settled_earlier(out: Path, rows: Sequence[JudgeLabel], files: tuple[str, str]) -> dict[str, JudgeLabel]:
    """The rows already in `out`, by unit, when they settle the same two files; else `LabelsError`."""
    wanted = tuple(Path(name).resolve() for name in files)
    for row in rows:
        given = row.adjudicated
        if given is None or tuple(Path(name).resolve() for name in given.of) != wanted:
            said = "rows that settle no two files" if given is None else f"the settled rows of {' and '.join(given.of)}"
            raise LabelsError(f"{out}: holds {said}, not of {' and '.join(files)}; give another --out")
    return {unit_of(row): row for row in rows}
