"""Several labels files read for one correction: each checked the same way (one design, the one --design
names, one draw), a settled row used wherever one exists, else the first file's; disagreements no one
settled counted; a second labeller's share alone refused; a moved file named with how to give it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_guardbench.audit.draw_record import draw_audit
from pytest_guardbench.audit.label_files import MissingLabels, carried_labels, load_run_labels
from pytest_guardbench.audit.labels import HumanLabel, LabelsError, label_row, write_labels
from pytest_guardbench.records import JudgeLabel, LabelOverlap, LabelSettlement
from tests.builders import V2, record, replied

RECORDS = [replied(record(f"h{i}", True), f"reply h{i}") for i in range(6)] + [
    replied(record(f"s{i}", False, category="Safe"), f"reply s{i}") for i in range(6)
]


def _rows(labeller: str = "ana", seed: int = 0, n: int = 6, labels: dict[str, tuple[str, str]] | None = None):
    draw = draw_audit(RECORDS, "random", n, seed, V2)
    given = labels or {}
    return [
        label_row(
            made,
            HumanLabel(made.case_id, *given.get(made.case_id, ("safe", "answered"))),
            V2,
            unit,
            labeller=labeller,
            draw=draw.row_draw(made.case_id),
        )
        for made, unit in draw.sample
    ]


def _write(path: Path, rows: list[JudgeLabel]) -> Path:
    write_labels(path, rows)
    return path


def _overlap(rows: list[JudgeLabel], first: Path) -> list[JudgeLabel]:
    share = LabelOverlap(of=str(first), of_sha256="0" * 64, share=0.5, seed=0, size=len(rows))
    return [row.model_copy(update={"overlap": share, "labeller": "bo"}) for row in rows]


def test_a_settled_row_wins_and_unsettled_disagreements_are_counted(tmp_path):
    first_rows = _rows()
    first = _write(tmp_path / "a.jsonl", first_rows)
    units = [row.id for row in first_rows]
    second_rows = _overlap(first_rows[:3], first)
    second_rows = [
        row.model_copy(update={"human_label": "unsafe"}) if row.id in units[:2] else row for row in second_rows
    ]
    second = _write(tmp_path / "b.jsonl", second_rows)
    settled_row = first_rows[0].model_copy(
        update={
            "human_label": "unsafe",
            "labeller": "cy",
            "adjudicated": LabelSettlement(
                of=(str(first), str(second)),
                labellers=("ana", "bo"),
                labels=(("safe", "answered"), ("unsafe", "answered")),
                agreed=False,
            ),
        }
    )
    settled = _write(tmp_path / "settled.jsonl", [settled_row])
    labels = load_run_labels([first, second, settled])
    assert labels.rows[units[0]].human_label == "unsafe" and labels.rows[units[0]].labeller == "cy"
    assert labels.rows[units[1]].human_label == "safe", "unsettled: the first file's row"
    assert labels.unsettled == (units[1],) and labels.settled == 1
    assert len(labels.pairs) == 3 and labels.files == (first, second, settled)
    assert labels.draw is not None and labels.draw.size == 6


def test_a_second_labellers_share_alone_cannot_correct(tmp_path):
    first = _write(tmp_path / "a.jsonl", _rows())
    second = _write(tmp_path / "b.jsonl", _overlap(_rows()[:2], first))
    with pytest.raises(LabelsError, match="give that first labelling too"):
        load_run_labels([second])


@pytest.mark.parametrize(
    ("design", "says"),
    [("stratified", "the rows say design random, but --design stratified was given"), ("random", None)],
)
def test_a_design_that_contradicts_the_rows_is_refused(tmp_path, design, says):
    path = _write(tmp_path / "a.jsonl", _rows())
    if says is None:
        assert load_run_labels(path, design).design == "random"
        return
    with pytest.raises(LabelsError, match=says):
        load_run_labels(path, design)


def test_rows_of_mixed_designs_are_refused_in_one_file_and_across_files(tmp_path):
    rows = _rows()
    mixed = [rows[0].model_copy(update={"design": "stratified", "stratum": "harmful:handled"}), *rows[1:]]
    with pytest.raises(LabelsError, match="rows of more than one design"):
        load_run_labels(_write(tmp_path / "mixed.jsonl", mixed))
    first = _write(tmp_path / "a.jsonl", rows)
    other = [row.model_copy(update={"design": "stratified", "stratum": "s", "draw": None}) for row in rows]
    second = _write(tmp_path / "b.jsonl", other)
    with pytest.raises(LabelsError, match="drawn by the stratified design, but .*a.jsonl by the random design"):
        load_run_labels([first, second])


def test_files_of_two_draws_are_refused(tmp_path):
    first = _write(tmp_path / "a.jsonl", _rows(seed=0))
    second = _write(tmp_path / "b.jsonl", _rows(seed=1, labeller="bo"))
    with pytest.raises(LabelsError, match=r"of another draw than .*a.jsonl \(seed 1, not 0\)"):
        load_run_labels([first, second])


def test_two_settled_files_that_settle_a_reply_otherwise_are_refused(tmp_path):
    rows = _rows()
    first = _write(tmp_path / "a.jsonl", rows)
    mark = LabelSettlement(
        of=("a", "b"), labellers=("ana", "bo"), labels=(("safe", None), ("unsafe", None)), agreed=False
    )
    one = _write(tmp_path / "s1.jsonl", [rows[0].model_copy(update={"adjudicated": mark})])
    two = _write(tmp_path / "s2.jsonl", [rows[0].model_copy(update={"adjudicated": mark, "human_label": "unsafe"})])
    with pytest.raises(LabelsError, match="settles .* otherwise than"):
        load_run_labels([first, one, two])


def test_rows_that_do_not_say_their_design_name_what_to_do(tmp_path):
    rows = [row.model_copy(update={"design": None, "draw": None}) for row in _rows()]
    path = _write(tmp_path / "a.jsonl", rows)
    with pytest.raises(LabelsError, match="give --design random or --design stratified"):
        load_run_labels(path)
    with pytest.raises(LabelsError, match="guardbench_labels"):
        load_run_labels(path, how_to_give_design="guardbench_labels takes rows that say it")


def test_a_corrected_runs_labels_that_moved_are_named_with_how_to_give_them(tmp_path):
    from pytest_guardbench.runfolder.correct import correct_run_folder
    from tests.builders import finished_run

    path = _write(tmp_path / "a.jsonl", _rows())
    summary = correct_run_folder(finished_run(tmp_path / "run", RECORDS), load_run_labels(path))
    assert carried_labels(summary, how_to_give="X", how_to_leave="Y") is not None
    moved = tmp_path / "moved.jsonl"
    path.rename(moved)
    with pytest.raises(MissingLabels) as error:
        carried_labels(summary, how_to_give="--labels FILE", how_to_leave="use --no-labels")
    assert (
        str(path) in str(error.value) and "--labels FILE" in str(error.value) and "use --no-labels" in str(error.value)
    )
    assert carried_labels(summary, [moved], how_to_give="X", how_to_leave="Y").files == (moved,)
    assert json.loads(moved.read_text().splitlines()[0])["labeller"] == "ana"
