"""The correction's population is every case of the run: a case the judge left unscored is a verdict
cell of its own whose labels count, and an errored case with no reply counts as not handled."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from pytest_guardbench.audit.designs import draw_design, draw_random
from pytest_guardbench.audit.label_files import load_run_labels
from pytest_guardbench.audit.labels import HumanLabel, label_row
from pytest_guardbench.audit.units import AuditUnit, unanswered_unit
from pytest_guardbench.document.summary import RunInfo
from pytest_guardbench.records import CaseRecord
from pytest_guardbench.runfolder.correct import correct_run_folder
from pytest_guardbench.runfolder.rescored import write_rescored_run
from tests.builders import V2, record


def _unscoring_judge_run(harmful_handled: int = 70, harmful_mishandled: int = 20, safe: int = 40):
    """A run whose judge leaves exactly the truly mishandled replies unscored (a malformed verdict), and
    is right on every other one; with the label a person gives each case."""
    rows: list[tuple[CaseRecord, str, str]] = []
    for i in range(harmful_handled):
        rows.append((record(f"h{i:03d}", True, "safe", "refused_or_blocked"), "safe", "refused_or_blocked"))
    for i in range(harmful_handled, harmful_handled + harmful_mishandled):
        rows.append((record(f"h{i:03d}", True, malformed=True), "unsafe", "answered"))
    for i in range(safe):
        rows.append((record(f"s{i:03d}", False, "safe", "answered"), "safe", "answered"))
    return rows


def _label_file(path: Path, rows, drawn) -> Path:
    by_id = {r.case_id: (r, safety, mode) for r, safety, mode in rows}
    lines = []
    for unit in drawn:
        rec, safety, mode = by_id[unit.unit_id]
        row = label_row(rec, HumanLabel(rec.case_id, safety, mode), V2, unit)
        lines.append(json.dumps(row.model_dump(mode="json", exclude_none=True)))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_judge_that_leaves_the_mishandled_replies_unscored_does_not_hide_them(tmp_path):
    rows = _unscoring_judge_run()
    run = tmp_path / "run"
    write_rescored_run(run, [r for r, _, _ in rows], None, run=RunInfo(run_id="r"), manifest={}, meta=None, policy=V2)
    true_recall = 70 / 90
    # A person labels a random sample of the run's cases, some of them the unscored ones.
    drawn = draw_random(sorted(r.case_id for r, _, _ in rows), 60, seed=random.Random(4).randrange(1000))
    path = _label_file(tmp_path / "labels.jsonl", rows, drawn)
    corrected = correct_run_folder(run, load_run_labels(path)).corrected
    assert corrected is not None
    recall = corrected.scorecards.system.recall
    # The judge-only recall stays judge-only: 1.000 over the 70 cases it scored.
    assert recall.judge_only == 1.0
    assert recall.n_total == 90
    assert recall.ci_low is not None and recall.ci_high is not None
    assert recall.ci_low <= true_recall <= recall.ci_high
    assert corrected.labels.not_in_run == 0 and corrected.labels.used == 60


def test_the_draw_reaches_the_unscored_replies_and_their_labels_are_used(tmp_path):
    rows = _unscoring_judge_run(30, 10, 20)
    records = [r for r, _, _ in rows]
    drawn = draw_design(records, "random", 60, 0, V2)
    assert len(drawn) == 60  # every case of the run is in the population, the unscored ten too
    stratified = draw_design(records, "stratified", 20, 0, V2)
    assert {unit.stratum for _, unit in stratified if unit is not None} >= {"harmful:no_verdict"}
    run = tmp_path / "run"
    write_rescored_run(run, records, None, run=RunInfo(run_id="r"), manifest={}, meta=None, policy=V2)
    units = [unit for _, unit in stratified if unit is not None]
    path = _label_file(tmp_path / "labels.jsonl", rows, units)
    corrected = correct_run_folder(run, load_run_labels(path)).corrected
    assert corrected is not None
    assert corrected.labels.used == 20 and corrected.labels.not_in_run == 0
    assert corrected.scorecards.judge_on_this_run.n_no_verdict >= 2


def test_an_errored_case_with_no_reply_counts_as_not_handled_and_the_judge_only_cards_stay(tmp_path):
    rows = [(record(f"h{i:02d}", True, "safe", "refused_or_blocked"), "safe", "refused_or_blocked") for i in range(20)]
    # Each safe case its own reply: one reply to many prompts would be a repeated reply, a non-answer.
    rows += [
        (record(f"s{i:02d}", False, "safe", "answered", reply=f"answer {i}"), "safe", "answered") for i in range(10)
    ]
    errored = [record(f"e{i}", i % 2 == 0, error=True) for i in range(4)]  # two harmful, two safe
    run = tmp_path / "run"
    summary = write_rescored_run(
        run, [r for r, _, _ in rows] + errored, None, run=RunInfo(run_id="r"), manifest={}, meta=None, policy=V2
    )
    judge_only = summary.scorecards.system
    units = [d for d in draw_random(sorted(r.case_id for r, _, _ in rows), 30, 0)]
    path = _label_file(tmp_path / "labels.jsonl", rows, units)
    corrected = correct_run_folder(run, load_run_labels(path))
    assert corrected.corrected is not None
    card = corrected.corrected.scorecards.system
    # Every other case is labelled and handled: the two errored harmful cases are the misses.
    assert card.recall.n_total == 22 and card.recall.estimate == pytest.approx(20 / 22, abs=1e-6)
    assert card.false_positive_rate.estimate == pytest.approx(2 / 12, abs=1e-6)
    # The judge-only scorecards are the judge's, over the cases it scored, as before.
    assert corrected.scorecards.system == judge_only
    assert judge_only.recall == 1.0 and judge_only.false_positive_rate == 0.0


def test_only_a_failed_case_with_no_reply_is_known_not_handled():
    failed = record("e", True, error=True)
    assert unanswered_unit(failed) == AuditUnit(
        unit_id="e", is_harmful=True, tutor_ran=True, judge_handled=None, known_handled=False
    )
    # A guard-only screen's case: no reply, and no error either.
    screened = record("g", True).model_copy(update={"response": None, "judge": None})
    assert unanswered_unit(screened) is None
    assert unanswered_unit(record("r", True)) is None  # it has a reply to label
    assert unanswered_unit(record("u", None, error=True)) is None  # no prompt label: in no domain
