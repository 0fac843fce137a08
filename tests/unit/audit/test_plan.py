"""`guardbench audit --plan` end to end: the plan counts the units each scorecard uses, and labelling
exactly the planned sample gives an interval for both rates."""

from __future__ import annotations

import json
import random
import re

import pytest

from pytest_guardbench.audit.designs import draw_design
from pytest_guardbench.audit.label_files import load_run_labels
from pytest_guardbench.audit.labels import HumanLabel, label_row
from pytest_guardbench.audit.plan import plan_run
from pytest_guardbench.commands.main import main
from pytest_guardbench.document.summary import RunInfo
from pytest_guardbench.records import CaseRecord
from pytest_guardbench.runfolder.correct import correct_run_folder
from pytest_guardbench.runfolder.rescored import write_rescored_run
from tests.builders import V2, conversation, record


def _run_of_80(seed: int = 8) -> tuple[list[CaseRecord], dict[str, tuple[str, str]]]:
    """80 cases, two thirds harmful; the judge misses a third of the unsafe replies and calls a tenth of
    the answered safe ones non-answers; two cases it leaves unscored."""
    rng = random.Random(seed)
    records, truth = [], {}
    for i in range(80):
        harmful = i % 3 != 0
        if harmful:
            safety, mode = ("unsafe", "answered") if rng.random() < 0.2 else ("safe", "refused_or_blocked")
            judged = ("safe", "refused_or_blocked") if safety == "unsafe" and rng.random() < 0.33 else (safety, mode)
        else:
            safety, mode = ("safe", "answered") if rng.random() < 0.6 else ("safe", "non_answer")
            judged = ("safe", "non_answer") if mode == "answered" and rng.random() < 0.1 else (safety, mode)
        case_id = f"{'h' if harmful else 's'}{i:02d}"
        records.append(record(case_id, harmful, *judged, malformed=i in (4, 5)))
        truth[case_id] = (safety, mode)
    return records, truth


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_planned_stratified_sample_gives_both_rates_an_interval(tmp_path, capsys, seed):
    records, truth = _run_of_80()
    run = tmp_path / "run"
    write_rescored_run(run, records, None, run=RunInfo(run_id="r"), manifest={}, meta=None, policy=V2)
    assert main(["audit", str(run), "--plan", "--half-width", "0.2"]) == 0
    said = capsys.readouterr().out
    planned = int(re.search(r"--design stratified: (\d+) labels", said).group(1))  # type: ignore[union-attr]
    plan, cases = plan_run(records, V2, 0.2)
    assert cases == 80 and planned == plan.stratified.total
    lines = []
    for view, unit in draw_design(records, "stratified", planned, seed, V2):
        safety, mode = truth[view.case_id]
        row = label_row(view, HumanLabel(view.case_id, safety, mode), V2, unit)
        lines.append(json.dumps(row.model_dump(mode="json", exclude_none=True)))
    path = tmp_path / "labels.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    corrected = correct_run_folder(run, load_run_labels(path)).corrected
    assert corrected is not None and corrected.labels.used == planned
    card = corrected.scorecards.system
    for metric in (card.recall, card.false_positive_rate):
        assert metric.note is None and metric.ci_low is not None and metric.ci_high is not None
        assert metric.ci_low <= metric.estimate <= metric.ci_high


def test_the_plan_counts_only_the_system_scorecards_units():
    records, _ = _run_of_80()
    alone, cases = plan_run(records, V2, 0.1)
    talks = [conversation(f"c{i}", True, [("safe", "answered", f"t{i}.{d}") for d in (1, 2)]) for i in range(40)]
    errored = [record(f"e{i}", True, error=True) for i in range(5)]
    mixed, mixed_cases = plan_run(records + talks + errored, V2, 0.1)
    # The conversations are not in the system scorecard: its cases are the 80, and five with no reply.
    assert (cases, mixed_cases) == (80, 85)
    # A random draw reaches the system scorecard through a pool that now holds 80 more replies.
    assert mixed.random.recall > alone.random.recall
    # The stratified strata hold the conversations' replies too, so the plan asks for more of them.
    assert mixed.stratified.recall > alone.stratified.recall
