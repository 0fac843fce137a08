"""The draw an audit file records, and its check against a run.

`guardbench audit` writes on every row the draw it came from (`records.LabelDraw`): the design, the
seed, the number of units drawn, the row's place in the draw order and a hash of the population drawn
from (`population_sha256`: every unit's id and the sha256 of its reply, sorted by id, one line each;
under the stratified design also the unit's stratum, since the strata decide the draw). With them a
draw is made again, on any machine: `audit` refuses to resume a file with another draw, and
`correct` draws again from the run and compares (`check_draw`): drawn, labelled, skipped, and label
rows outside the draw.

Skipped units (drawn, never labelled) bias the correction when they differ from the labelled ones, as
when a labeller skips the hard replies. Which ones they are cannot be known, but where they sit can:
`skip_warning` warns when 10% or more of the drawn units are skipped, or when one group's units (a
prompt domain under the random design, a stratum under the stratified one) are skipped at twice the
rate of the other drawn units or more, at least 2 of them.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from pytest_guardbench.audit.designs import (
    DrawnUnit,
    draw_cluster,
    draw_design,
    draw_random,
    draw_stratified,
    stratum_of,
)
from pytest_guardbench.audit.labels import RecordedDraw, reply_sha256
from pytest_guardbench.audit.units import audit_units, split_unit_id
from pytest_guardbench.document.labelling import DrawCheck
from pytest_guardbench.records import AuditDesign, CaseRecord, LabelDraw
from pytest_guardbench.scoring.policies import ScoringPolicy

# Skipping this share of the drawn units or more is worth a warning wherever they sit.
SKIPPED_SHARE_WARNED = 0.10
# A group skipped at this many times the rest's rate (with at least MIN_SKIPPED_IN_GROUP skipped) is warned of.
CONCENTRATION = 2
MIN_SKIPPED_IN_GROUP = 2


class PopulationUnit(NamedTuple):
    """One unit a design draws from: its id, its reply's sha256, its prompt's label and the judge's
    handled verdict (None: no usable verdict), which place it in a stratum."""

    unit_id: str
    reply_sha256: str
    is_harmful: bool | None
    judge_handled: bool | None

    @property
    def stratum(self) -> str:
        return stratum_of(bool(self.is_harmful), self.judge_handled)


def population_sha256(design: str, units: Iterable[PopulationUnit]) -> str:
    """The hash of a draw's population: each unit's id and reply hash (and stratum, when stratified)."""
    lines = sorted(
        f"{u.unit_id}\t{u.reply_sha256}" + (f"\t{u.stratum}" if design == "stratified" else "") for u in units
    )
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def population_of(records: Sequence[CaseRecord], design: str, policy: ScoringPolicy) -> list[PopulationUnit]:
    """The units `design` draws from in these records (as `designs.draw_design` draws them)."""
    if design == "debug":
        return [
            PopulationUnit(r.case_id, reply_sha256(r.response.text), r.is_harmful, None)
            for r in records
            if r.response is not None
        ]
    return [
        PopulationUnit(
            unit.unit_id,
            reply_sha256(view.response.text if view.response is not None else ""),
            unit.is_harmful,
            unit.judge_handled,
        )
        for view, unit in audit_units(records, policy)
    ]


@dataclass(frozen=True)
class AuditDraw:
    """A draw made for labelling: the units in draw order (each with how the design drew it; None under
    `debug`) and what the rows record of it."""

    design: AuditDesign
    seed: int
    population_sha256: str
    sample: list[tuple[CaseRecord, DrawnUnit | None]]

    @property
    def size(self) -> int:
        """What the design was asked to draw: units, or under `cluster` the cases they belong to."""
        if self.design == "cluster":
            return len({split_unit_id(record.case_id)[0] for record, _ in self.sample})
        return len(self.sample)

    @property
    def recorded(self) -> RecordedDraw:
        return RecordedDraw(self.design, self.seed, self.size, self.population_sha256)

    def row_draw(self, unit_id: str) -> LabelDraw:
        """The draw record of the row that labels `unit_id`."""
        position = next(i for i, (record, _) in enumerate(self.sample, 1) if record.case_id == unit_id)
        return LabelDraw(seed=self.seed, size=self.size, population_sha256=self.population_sha256, position=position)


def draw_audit(
    records: Sequence[CaseRecord], design: AuditDesign, n: int, seed: int, policy: ScoringPolicy
) -> AuditDraw:
    """`n` units drawn under `design` with `seed` (`designs.draw_design`), with the draw's record."""
    sample = draw_design(records, design, n, seed, policy)
    digest = population_sha256(design, population_of(records, design, policy))
    return AuditDraw(design=design, seed=seed, population_sha256=digest, sample=sample)


def redrawn_ids(draw: RecordedDraw, population: Sequence[PopulationUnit]) -> list[str] | None:
    """The unit ids the recorded draw gives from `population`, in draw order; None for a design that
    cannot be drawn again from the units alone."""
    if draw.design == "random":
        return [u.unit_id for u in draw_random([u.unit_id for u in population], draw.size, draw.seed)]
    if draw.design == "stratified":
        return [u.unit_id for u in draw_stratified([(u.unit_id, u.stratum) for u in population], draw.size, draw.seed)]
    if draw.design == "cluster":
        pairs = [(u.unit_id, split_unit_id(u.unit_id)[0]) for u in population]
        return [u.unit_id for u in draw_cluster(pairs, draw.size, draw.seed)]
    return None


def check_draw(
    draw: RecordedDraw | None, design: str, labelled: set[str], population: Sequence[PopulationUnit]
) -> DrawCheck:
    """The label rows (`labelled`: the units they label) against the draw they record, drawn again from
    this run's `population` when it is the population the rows were drawn from."""
    if draw is None:
        return DrawCheck(
            design=design,
            seed=None,
            drawn=None,
            labelled=len(labelled),
            skipped=None,
            outside=0,
            checked="not recorded",
        )
    ids = (
        redrawn_ids(draw, population) if population_sha256(draw.design, population) == draw.population_sha256 else None
    )
    if ids is None:
        skipped = max(0, draw.size - len(labelled))
        return DrawCheck(
            design=design,
            seed=draw.seed,
            drawn=draw.size,
            labelled=len(labelled),
            skipped=skipped,
            outside=0,
            checked="population differs",
            warning=skip_warning(Counter({"the draw": draw.size}), Counter({"the draw": skipped})),
        )
    drawn = set(ids)
    by_id = {u.unit_id: u for u in population}

    def group(unit_id: str) -> str:
        unit = by_id[unit_id]
        if draw.design == "stratified":
            return f"stratum {unit.stratum}"
        return "harmful prompts" if unit.is_harmful else "safe prompts"

    skipped_ids = drawn - labelled
    return DrawCheck(
        design=design,
        seed=draw.seed,
        drawn=len(drawn),
        labelled=len(drawn & labelled),
        skipped=len(skipped_ids),
        outside=len(labelled - drawn),
        checked="redrawn",
        warning=skip_warning(Counter(map(group, drawn)), Counter(map(group, skipped_ids))),
    )


def skip_warning(drawn: Counter[str], skipped: Counter[str]) -> str | None:
    """Why the skipped units could bias the correction (see the module's rule), or None."""
    total, lost = sum(drawn.values()), sum(skipped.values())
    if not lost or not total:
        return None
    overall = lost / total
    crowded = sorted(
        name
        for name, count in skipped.items()
        # In whole numbers: count / drawn >= 2 x (lost - count) / (total - drawn), the rest's skip rate.
        if count >= MIN_SKIPPED_IN_GROUP
        and len(drawn) > 1
        and count * (total - drawn[name]) >= CONCENTRATION * (lost - count) * drawn[name]
    )
    if overall < SKIPPED_SHARE_WARNED and not crowded:
        return None
    where = "".join(f"; {skipped[name]} of the {drawn[name]} in {name}" for name in crowded)
    return (
        f"{lost} of the {total} drawn units were skipped ({overall:.0%}){where}: the correction takes them to be "
        "like the labelled ones, which a skipped hard case is not; label them (the same guardbench audit "
        "command goes on where it stopped)"
    )
