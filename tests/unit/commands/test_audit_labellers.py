"""The labellers at the terminal: each choice's rule beside its key and the rubric's examples on `?`; every
row naming its labeller, rubric and draw; an audit file never deleted or rewritten by a resume with
another seed, design or run (exit 4, the file as it was); a run being written refused; a second
labeller's blind share of a first labeller's draw, its disagreements settled, and the three files
correcting the run."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from pytest_guardbench.audit.rubric import RUBRIC_VERSION, examples_of, rule_for
from pytest_guardbench.commands.main import main
from pytest_guardbench.document.read import load_run
from pytest_guardbench.runfolder.lock import RunFolderLock
from tests.builders import finished_run, record, replied
from tests.unit.commands.audit_terminal import Terminal


def _records(changed: str | None = None):
    made = [
        *[record(f"h{n}.original", True, "safe", "refused_or_blocked") for n in range(8)],
        *[record(f"s{n}.original", False, "safe", "answered", category="Safe") for n in range(8)],
    ]
    return [replied(r, f"reply to {r.case_id}" + (" (edited)" if r.case_id == changed else "")) for r in made]


def _label_all(term: Terminal, count: int, keys: str = "sa") -> None:
    for _ in range(count):
        term.press(keys[0], "Is the response safe")
        term.press(keys[1], "Answer mode?")


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A finished run and a first labeller's audit of 4 of its replies, through the terminal."""
    folder = tmp_path_factory.mktemp("labellers")
    run = finished_run(folder / "run", _records())
    audit = folder / "audit.jsonl"
    term = Terminal(str(run), "--sample", "4", "--out", str(audit), "--labeller", "ana")
    _label_all(term, 4)
    term.wait_for("4 of 4 cases labelled")
    assert term.close() == 0
    return run, audit


def _shows(screen: str, text: str) -> bool:
    """Whether the terminal shows `text`, however its lines were wrapped."""
    return " ".join(text.split()) in " ".join(screen.split())


def test_each_choice_shows_its_rule_and_question_mark_opens_the_fields_examples(first, tmp_path):
    run, _ = first
    out = tmp_path / "a.jsonl"
    term = Terminal(str(run), "--sample", "2", "--seed", "3", "--out", str(out), "--labeller", "bo")
    screen = term.wait_for("[?] rubric and examples")
    assert "[s] safe" in screen and _shows(screen, rule_for("response_safety", "s"))
    assert "[u] unsafe" in screen and _shows(screen, rule_for("response_safety", "u"))
    term.press("?", "[?] rubric and examples")
    screen = term.wait_for("press any key to go back to the case")
    unsafe = examples_of(field="response_safety", choice="unsafe")[0]
    assert "Examples of unsafe:" in screen and _shows(screen, f"child: {unsafe.prompt}")
    term.press("x", "press any key")
    term.wait_for("Is the response safe")  # the case again, and the same question
    term.press("s", "[?] rubric and examples")
    screen = term.wait_for("Answer mode?")
    screen = term.wait_for("[?] rubric and examples")
    assert "[i] indirect" in screen and _shows(screen, rule_for("answer_mode", "i"))
    term.press("?", "[?] rubric and examples")
    screen = term.wait_for("press any key to go back to the case")
    assert "Examples of indirect:" in screen and "Examples of unsafe:" not in screen, "the examples of the field asked"
    term.press("x", "press any key")
    term.wait_for("Answer mode?")  # the safety answer is kept: only the answer mode is asked again
    term.press("a", "[?] rubric and examples")
    term.press("q", "case 2/2")
    assert term.close() == 0
    (row,) = _rows(out)
    assert (row["human_label"], row["answer_mode"], row["labeller"]) == ("safe", "answered", "bo")
    assert row["rubric_version"] == RUBRIC_VERSION
    assert row["draw"]["seed"] == 3 and row["draw"]["size"] == 2 and row["draw"]["position"] == 1
    assert len(row["draw"]["population_sha256"]) == 64


def test_every_row_records_the_labeller_the_rubric_and_its_place_in_the_draw(first):
    _, audit = first
    rows = _rows(audit)
    assert {r["labeller"] for r in rows} == {"ana"} and {r["rubric_version"] for r in rows} == {RUBRIC_VERSION}
    assert sorted(r["draw"]["position"] for r in rows) == [1, 2, 3, 4]
    assert {(r["design"], r["draw"]["seed"], r["draw"]["size"]) for r in rows} == {("random", 0, 4)}


def test_labelling_without_a_name_is_refused(first, tmp_path, capsys):
    run, _ = first
    assert main(["audit", str(run), "--out", str(tmp_path / "a.jsonl")]) == 4
    err = capsys.readouterr().err
    assert "give --labeller NAME" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "a.jsonl").exists()


def _copy(audit: Path, tmp_path: Path) -> tuple[Path, bytes]:
    copy = tmp_path / audit.name
    shutil.copy(audit, copy)
    return copy, copy.read_bytes()


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--seed", "1"], "seed 0, not 1"),
        (["--sample", "6"], "sample size 4, not 6"),
        (["--design", "stratified"], "design random, not stratified"),
    ],
)
def test_a_resume_with_another_draw_is_refused_and_the_file_kept(first, tmp_path, capsys, options, says):
    run, audit = first
    copy, before = _copy(audit, tmp_path)
    code = main(["audit", str(run), "--out", str(copy), "--labeller", "ana", "--sample", "4", *options])
    err = capsys.readouterr().err
    assert code == 4 and str(copy) in err and says in err and len(err.strip().splitlines()) == 1
    assert copy.read_bytes() == before


def test_out_naming_another_runs_file_is_refused(first, tmp_path, capsys):
    _, audit = first
    other = finished_run(tmp_path / "other", _records(changed="h0.original"))
    copy, before = _copy(audit, tmp_path)
    assert main(["audit", str(other), "--out", str(copy), "--labeller", "ana", "--sample", "4"]) == 4
    err = capsys.readouterr().err
    assert str(copy) in err and "another population (another run, or its replies changed)" in err
    assert copy.read_bytes() == before


def test_a_debug_file_resumed_with_the_random_design_is_refused(first, tmp_path, capsys):
    run, _ = first
    debug = tmp_path / "debug.jsonl"
    term = Terminal(str(run), "--design", "debug", "--sample", "3", "--out", str(debug), "--labeller", "ana")
    _label_all(term, 1)
    term.press("q", "case 2/3")
    assert term.close() == 0
    before = debug.read_bytes()
    assert _rows(debug)[0]["design"] == "debug"
    assert (
        main(["audit", str(run), "--design", "random", "--sample", "3", "--out", str(debug), "--labeller", "ana"]) == 4
    )
    err = capsys.readouterr().err
    assert "design debug, not random" in err and str(debug) in err
    assert debug.read_bytes() == before
    assert main(["correct", str(run), "--labels", str(debug)]) == 4
    assert "debug design" in capsys.readouterr().err


def test_a_run_being_written_is_refused_by_audit_and_correct(first, tmp_path, capsys):
    run, audit = first
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    holder = RunFolderLock(copy).acquire()
    try:
        assert main(["audit", str(copy), "--labeller", "ana", "--out", str(tmp_path / "a.jsonl")]) == 4
        assert "another process is writing this run folder" in capsys.readouterr().err
        summary = (copy / "summary.json").read_bytes()
        assert main(["correct", str(copy), "--labels", str(audit), "--design", "random"]) == 4
        assert "another process is writing this run folder" in capsys.readouterr().err
        assert (copy / "summary.json").read_bytes() == summary and not (copy / "corrected.json").exists()
    finally:
        holder.release()
    (copy / "summary.json").unlink()  # a run killed before its finish: its records are not the run's
    assert main(["audit", str(copy), "--labeller", "ana", "--out", str(tmp_path / "a.jsonl")]) == 4
    assert "no summary.json: the run is still being written" in capsys.readouterr().err
    assert main(["correct", str(copy), "--labels", str(audit)]) == 4
    assert "no summary.json" in capsys.readouterr().err
    assert not (tmp_path / "a.jsonl").exists()


def test_a_second_labeller_labels_a_blind_share_and_the_disagreements_are_settled(first, tmp_path, capsys):
    run, audit = first
    run = Path(shutil.copytree(run, tmp_path / "run"))
    overlap = tmp_path / "overlap.jsonl"
    assert main(["audit", str(run), "--overlap", "0.5", "--of", str(audit), "--labeller", "ana"]) == 4
    assert "--labeller ana labelled" in capsys.readouterr().err, "a second labeller is another person"
    term = Terminal(str(run), "--overlap", "0.5", "--of", str(audit), "--out", str(overlap), "--labeller", "bo")
    screen = term.wait_for("Is the response safe")
    assert "judge" not in screen.lower() and "ana" not in screen, "blind to the judge and to the first labeller"
    _label_all(term, 1, "ua")  # bo says unsafe where ana said safe
    screen = term.wait_for("Is the response safe")
    assert "the judge said" not in screen and "judge" not in screen.lower()
    _label_all(term, 1, "sa")
    term.wait_for("2 of 2 cases labelled")
    assert term.close() == 0
    rows = _rows(overlap)
    first_rows = {r["id"]: r for r in _rows(audit)}
    assert len(rows) == 2 and {r["labeller"] for r in rows} == {"bo"}
    for row in rows:
        assert row["overlap"] == {
            "of": str(audit),
            "of_sha256": hashlib.sha256(audit.read_bytes()).hexdigest(),
            "share": 0.5,
            "seed": 0,
            "size": 2,
        }
        mine = first_rows[row["id"]]
        assert (row["draw"], row["design"], row["inclusion_probability"]) == (
            mine["draw"],
            mine["design"],
            mine["inclusion_probability"],
        ), "the draw's design and inclusion probabilities"

    settled = tmp_path / "settled.jsonl"
    term = Terminal(str(run), "--adjudicate", str(audit), str(overlap), "--out", str(settled), "--labeller", "cy")
    screen = term.wait_for("[?] rubric and examples")
    assert "first labeller (ana): safe, answered" in screen and "second labeller (bo): unsafe, answered" in screen
    assert "judge" not in screen.lower() and _shows(screen, rule_for("response_safety", "u"))
    term.press("u", "[?] rubric and examples")
    term.press("a", "Answer mode?")
    term.wait_for("1 of 1 disagreements settled")
    assert term.close() == 0
    settled_rows = _rows(settled)
    assert len(settled_rows) == 2, "every reply both labelled is settled"
    marks = sorted((r["adjudicated"]["agreed"], r["human_label"]) for r in settled_rows)
    assert marks == [(False, "unsafe"), (True, "safe")]
    assert {r["labeller"] for r in settled_rows} == {"cy"}
    assert {tuple(r["adjudicated"]["labellers"]) for r in settled_rows} == {("ana", "bo")}
    assert {tuple(r["adjudicated"]["of"]) for r in settled_rows} == {(str(audit), str(overlap))}

    code = main(["correct", str(run), "--labels", str(audit), "--labels", str(overlap), "--labels", str(settled)])
    out = capsys.readouterr().out
    corrected = load_run(run).corrected
    assert corrected is not None and code in (0, 1, 6)
    assert corrected.labels.settled == 2 and corrected.labels.unsettled == 0
    assert corrected.labels.labels_files == [str(audit), str(overlap), str(settled)]
    assert corrected.labellers is not None and corrected.labellers.rows == 2
    assert corrected.labellers.labellers == ["ana", "bo"]
    assert "labellers' kappa (ana and bo, 2 replies both labelled)" in out and "the judge's" in out
    assert corrected.labels.draw is not None and corrected.labels.draw.checked == "redrawn"
    assert (corrected.labels.draw.drawn, corrected.labels.draw.labelled, corrected.labels.draw.skipped) == (4, 4, 0)
