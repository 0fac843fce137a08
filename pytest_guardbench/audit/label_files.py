"""The labels files that correct one run, read together (`load_run_labels`): a first labelling, a second
labeller's share of it (`audit --overlap`) and the settled rows of their disagreements (`audit
--adjudicate`), in any number and order.

Each file is checked the same way: rows of one design (the `debug` design cannot correct), that design
the one `--design` names when it is given, one draw across every file (`labels.RecordedDraw`), and no
unit labelled twice in a file. Then each unit takes one row: a settled row where one exists, else the
row of the first file given that labels it. Two files whose rows of a unit disagree, with no settled
row, leave that unit `unsettled` (the first file's row is used, and the run says so); two labellers'
rows of one unit are kept as a pair, for their agreement.

A file of second labellings or settled rows alone is refused: it holds a share of the draw, whose
inclusion probabilities are not the rows' (they are the whole draw's)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pytest_guardbench.audit.labels import LabelsError, RecordedDraw, RunLabels, unit_of
from pytest_guardbench.cases.sources import load_judge_labels
from pytest_guardbench.document.correction import DESIGNS, Design
from pytest_guardbench.document.summary import RunSummary
from pytest_guardbench.errors import DataError
from pytest_guardbench.records import JudgeLabel

# How a command's user gives a design, for the message when the rows do not say it.
CORRECT_DESIGN = "give --design random or --design stratified"


def load_run_labels(
    paths: Path | Sequence[Path], design: str | None = None, *, how_to_give_design: str = CORRECT_DESIGN
) -> RunLabels:
    """The label rows of `paths` (one file or several), one per unit, for correcting a run. `design`:
    how they were drawn, for rows that do not say (labels made outside `guardbench audit`); rows that
    say another design are refused. `how_to_give_design`: what to do when no row says and none is given."""
    files = [paths] if isinstance(paths, Path) else list(paths)
    if not files:
        raise LabelsError("no labels file given")
    if len(set(files)) < len(files):
        raise LabelsError(f"{next(f for f in files if files.count(f) > 1)}: given twice")
    read = [(path, load_judge_labels(path)) for path in files]
    chosen = _one_design([(path, rows) for path, rows in read], design, how_to_give_design)
    draw = _one_draw(read)
    firsts = [path for path, rows in read if any(r.overlap is None and r.adjudicated is None for r in rows)]
    if not firsts:
        raise LabelsError(
            f"{files[0]}: holds only a second labeller's rows or settled rows, a share of another file's draw; "
            "give that first labelling too (--labels FIRST --labels THIS)"
        )
    by_file = [(path, _by_unit(path, rows, chosen)) for path, rows in read]
    return _combined(files, by_file, chosen, draw)


def _one_design(read: Sequence[tuple[Path, list[JudgeLabel]]], design: str | None, how: str) -> Design:
    said: tuple[str, Path] | None = None
    for path, rows in read:
        given = sorted({row.design for row in rows if row.design is not None})
        if "debug" in given or design == "debug":
            raise LabelsError(
                f"{path}: drawn by the debug design, whose inclusion probabilities are unknown, so it cannot "
                "correct a scorecard; draw a sample with guardbench audit --design random (or stratified)"
            )
        if len(given) > 1:
            counts = ", ".join(f"{name} {sum(1 for r in rows if r.design == name)}" for name in given)
            raise LabelsError(f"{path}: rows of more than one design ({counts} rows); one labels set has one design")
        if given and design is not None and given[0] != design:
            raise LabelsError(f"{path}: the rows say design {given[0]}, but --design {design} was given; leave it out")
        if design is None and (not given or any(row.design is None for row in rows)):
            raise LabelsError(f"{path}: the rows do not say how they were drawn; {how}")
        if given and said is not None and said[0] != given[0]:
            raise LabelsError(f"{path}: drawn by the {given[0]} design, but {said[1]} by the {said[0]} design")
        if given and said is None:
            said = (given[0], path)
    chosen = design or (said[0] if said else None)
    if chosen not in DESIGNS:
        raise LabelsError(f"--design {chosen}: choose {', '.join(DESIGNS)}")
    return chosen


def _one_draw(read: Sequence[tuple[Path, list[JudgeLabel]]]) -> RecordedDraw | None:
    """The one draw the rows record (None when none records one); two draws are refused."""
    found: tuple[Path, RecordedDraw] | None = None
    for path, rows in read:
        for row in rows:
            draw = RecordedDraw.of_row(row)
            if draw is None:
                continue
            if found is None:
                found = (path, draw)
            elif draw != found[1]:
                where = f"{found[0]}" if found[0] != path else "its other rows"
                raise LabelsError(
                    f"{path}: row {unit_of(row)} is of another draw than {where} "
                    f"({'; '.join(draw.differences(found[1]))}); labels of one run come from one draw"
                )
    return found[1] if found else None


def _by_unit(path: Path, rows: list[JudgeLabel], design: str) -> dict[str, JudgeLabel]:
    by_unit: dict[str, JudgeLabel] = {}
    for row in rows:
        unit = unit_of(row)
        if unit in by_unit:
            where = "" if row.turn is None else f" turn {row.turn}"
            raise DataError(f"case {row.id}{where} is labelled twice", path=path)
        if design in ("stratified", "cluster") and (row.stratum is None or row.inclusion_probability is None):
            raise DataError(f"row {row.id}: a {design} label needs its stratum and inclusion_probability", path=path)
        by_unit[unit] = row
    return by_unit


def _labels(row: JudgeLabel) -> tuple[str, str | None]:
    return (row.human_label, row.answer_mode)


def _combined(
    files: list[Path], by_file: list[tuple[Path, dict[str, JudgeLabel]]], design: Design, draw: RecordedDraw | None
) -> RunLabels:
    settled: dict[str, tuple[Path, JudgeLabel]] = {}
    plain: dict[str, list[JudgeLabel]] = {}
    for path, rows in by_file:
        for unit, row in rows.items():
            if row.adjudicated is None:
                plain.setdefault(unit, []).append(row)
                continue
            if unit in settled and _labels(settled[unit][1]) != _labels(row):
                raise LabelsError(f"{path}: settles {unit} otherwise than {settled[unit][0]}; give one of them")
            settled.setdefault(unit, (path, row))
    chosen: dict[str, JudgeLabel] = {}
    pairs: list[tuple[JudgeLabel, JudgeLabel]] = []
    unsettled: list[str] = []
    for unit in sorted(set(plain) | set(settled)):
        labellings = plain.get(unit, [])
        pairs += [(labellings[0], other) for other in labellings[1:]]
        if unit in settled:
            chosen[unit] = settled[unit][1]
            continue
        chosen[unit] = labellings[0]
        if any(_labels(other) != _labels(labellings[0]) for other in labellings[1:]):
            unsettled.append(unit)
    return RunLabels(
        path=files[0],
        design=design,
        rows=chosen,
        paths=tuple(files),
        pairs=tuple(pairs),
        settled=len(settled),
        unsettled=tuple(unsettled),
        draw=draw,
    )


class MissingLabels(LabelsError):
    """A corrected run's labels files are gone; the message names them and how to give them."""


def recorded_files(summary: RunSummary | None) -> list[Path]:
    """The labels files a corrected run was corrected with, as its summary names them (none when it was not)."""
    if summary is None or summary.corrected is None:
        return []
    use = summary.corrected.labels
    return [Path(name) for name in (use.labels_files or [use.labels_file])]


def carried_labels(
    summary: RunSummary | None, given: Sequence[Path] = (), *, how_to_give: str, how_to_leave: str
) -> RunLabels | None:
    """The labels a run made from a corrected run's records (rejudge, merge, resume) is corrected with:
    the same replies, so the same labels. `given`: files named instead of those the summary names (they
    moved). None when the run was not corrected and none are given; `MissingLabels` naming the files
    when they are gone, so a corrected run never turns judge-only without a word: `how_to_give` says how
    to name them where they are now, `how_to_leave` how to go on without them."""
    design = summary.corrected.labels.design if summary is not None and summary.corrected is not None else None
    if given:
        return load_run_labels(list(given), design)
    files = recorded_files(summary)
    if not files:
        return None
    gone = [str(path) for path in files if not path.is_file()]
    if gone:
        them = "them" if len(gone) > 1 else "it"
        raise MissingLabels(
            f"the run was corrected with {', '.join(gone)}, which {'are' if len(gone) > 1 else 'is'} no longer "
            f"there; give {them} where {'they are' if len(gone) > 1 else 'it is'} now ({how_to_give}), or "
            f"{how_to_leave}"
        )
    return load_run_labels(files, design)
