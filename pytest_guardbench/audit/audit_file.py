"""An audit file on its way: whether the rows already in it may be resumed by this draw, and the share
of a first labeller's draw that a second labeller labels (`overlap_share`).

`audit` never deletes or rewrites an earlier row. A file is resumed only by the draw its rows record
(same design, seed, size and population); a file of another seed, another design, another sample size
or another run (its population hash differs), or rows of a second labeller or an adjudicator, is
refused with a line naming the file and what differs. Rows written before the draw was recorded are
resumed when their design is this draw's and every one of their units is in it with the same reply."""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_guardbench.audit.draw_record import AuditDraw
from pytest_guardbench.audit.labels import LabelsError, RecordedDraw, reply_sha256, unit_of
from pytest_guardbench.records import JudgeLabel, LabelOverlap


def _draw_words(draw: RecordedDraw) -> str:
    return f"--design {draw.design} --seed {draw.seed} --sample {draw.size}"


def check_resumable(out: Path, rows: Sequence[JudgeLabel], draw: AuditDraw) -> None:
    """`LabelsError` unless the rows already in `out` are rows of `draw`, labelled by a first labeller."""
    for row in rows:
        if row.overlap is not None:
            raise LabelsError(
                f"{out}: holds a second labeller's rows (a share of {row.overlap.of}); resume it with "
                f"--overlap {row.overlap.share:g} --of {row.overlap.of}, or give another --out"
            )
        if row.adjudicated is not None:
            raise LabelsError(
                f"{out}: holds settled rows; resume it with --adjudicate {' '.join(row.adjudicated.of)}, "
                "or give another --out"
            )
    _check_same_draw(out, rows, draw)


def _check_same_draw(out: Path, rows: Sequence[JudgeLabel], draw: AuditDraw) -> None:
    """`LabelsError` naming `out` and what differs unless every row is of `draw`."""
    mine = draw.recorded
    replies = {
        record.case_id: reply_sha256(record.response.text if record.response is not None else "")
        for record, _ in draw.sample
    }
    for row in rows:
        recorded = RecordedDraw.of_row(row)
        if recorded is not None and recorded != mine:
            differs = "; ".join(recorded.differences(mine))
            raise LabelsError(
                f"{out}: its rows were drawn with {_draw_words(recorded)}, and this audit would draw with "
                f"{_draw_words(mine)} ({differs}); resume it with the same options on the run it was drawn from, "
                "or give another --out (its rows are kept as they are)"
            )
        if recorded is None and row.design != draw.design:
            raise LabelsError(
                f"{out}: its rows were drawn by the {row.design or 'unnamed'} design, not --design {draw.design}; "
                f"resume it with --design {row.design or '...'}, or give another --out (its rows are kept as they are)"
            )
        unit = unit_of(row)
        if recorded is None and (unit not in replies or replies[unit] != (row.reply_sha256 or replies[unit])):
            raise LabelsError(
                f"{out}: row {unit} is not in this draw ({_draw_words(mine)}) of this run's replies; resume it with "
                "the seed and sample that drew it, on the run it was drawn from, or give another --out"
            )


@dataclass(frozen=True)
class OverlapShare:
    """The units of a first labeller's draw that a second labeller labels, in the order shown, and the
    `overlap` record of their rows."""

    units: list[str]
    overlap: LabelOverlap


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def first_draw(first: Path, rows: Sequence[JudgeLabel]) -> RecordedDraw:
    """The one draw a first labeller's rows record; `LabelsError` when they record none or several."""
    if not rows:
        raise LabelsError(f"{first}: holds no label rows; the first labeller labels before a second one overlaps")
    if any(row.overlap is not None or row.adjudicated is not None for row in rows):
        raise LabelsError(f"{first}: holds a second labeller's or settled rows; give the first labeller's file")
    draws = {RecordedDraw.of_row(row) for row in rows}
    if None in draws:
        raise LabelsError(
            f"{first}: its rows do not record their draw (written before guardbench recorded it); a second "
            "labeller overlaps a draw that guardbench audit recorded"
        )
    if len(draws) > 1:
        raise LabelsError(f"{first}: its rows record more than one draw")
    found = draws.pop()
    assert found is not None
    return found


def overlap_share(
    first: Path, draw: AuditDraw, share: float, seed: int, out: Path, earlier: Sequence[JudgeLabel] = ()
) -> OverlapShare:
    """The seeded random `share` of `draw` (the first labeller's, drawn again from the run) that a second
    labeller labels: ceil(share x size) units, uniform without replacement over the drawn units' ids
    sorted, by `random.Random(seed)`. `earlier`: the second labeller's rows already in `out`, whose share
    must be this one (else `LabelsError`); their `overlap` record is kept."""
    drawn = sorted(record.case_id for record, _ in draw.sample)
    size = max(1, math.ceil(share * len(drawn) - 1e-9))
    units = random.Random(seed).sample(drawn, size)
    overlap = LabelOverlap(of=str(first), of_sha256=file_sha256(first), share=share, seed=seed, size=size)
    for row in earlier:
        given = row.overlap
        same = given is not None and (given.share, given.seed, given.size) == (share, seed, size)
        if given is None or not same or Path(given.of).resolve() != first.resolve():
            said = (
                "a first labelling" if given is None else f"a share {given.share:g} (seed {given.seed}) of {given.of}"
            )
            raise LabelsError(
                f"{out}: holds {said}, not a share {share:g} "
                f"(seed {seed}) of {first}; resume it with its own options, or give another --out"
            )
        if RecordedDraw.of_row(row) != draw.recorded:
            raise LabelsError(f"{out}: its rows are of another draw than {first}'s now; give another --out")
        overlap = given
    return OverlapShare(units=units, overlap=overlap)
