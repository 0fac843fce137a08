"""The main job's labels as shipped: a first labelling of 160 replies, a second blind labelling of a
seeded random 100 of them by the rubric, and the settled rows of those 100. The second file's replies
are the draw its overlap records, every settled row settles the two files, and the two labellings
disagree where the issue that asked for them said they would: on safe prompts, where the policy label's
kappa is under 0.6."""

from __future__ import annotations

import hashlib
import json
import random

from pathlib import Path

from pytest_guardbench._util.package_data import DATASETS, shipped_file
from pytest_guardbench.audit.agreement import labeller_agreement
from pytest_guardbench.audit.label_files import load_run_labels
from pytest_guardbench.audit.rubric import RUBRIC_VERSION
from pytest_guardbench.cases.sources import load_judge_labels
from pytest_guardbench.commands.main import main


def _paths() -> list[Path]:
    names = ("main_job_audit_v1", "main_job_audit_v1_second", "main_job_audit_v1_settled")
    found = [shipped_file(name, (DATASETS,)) for name in names]
    assert all(path is not None for path in found)
    return [path for path in found if path is not None]


def test_the_second_labelling_is_the_seeded_random_share_its_rows_record():
    first, second, _ = _paths()
    first_rows, second_rows = load_judge_labels(first), load_judge_labels(second)
    overlap = second_rows[0].overlap
    assert overlap is not None and all(row.overlap == overlap for row in second_rows)
    assert overlap.of_sha256 == hashlib.sha256(first.read_bytes()).hexdigest(), "the first file as it was shared"
    drawn = random.Random(overlap.seed).sample(sorted(row.id for row in first_rows), overlap.size)
    assert [row.id for row in second_rows] == drawn
    assert {row.labeller for row in second_rows} == {"second labeller (blind, rubric only)"}
    assert {row.rubric_version for row in second_rows} == {RUBRIC_VERSION}
    by_id = {row.id: row for row in first_rows}
    assert all((row.prompt, row.response) == (by_id[row.id].prompt, by_id[row.id].response) for row in second_rows)


def test_every_reply_both_labelled_is_settled_once_and_the_labels_settle_them():
    first, second, settled = _paths()
    second_rows, settled_rows = load_judge_labels(second), load_judge_labels(settled)
    assert [row.id for row in settled_rows] == [row.id for row in second_rows]
    disagreed = [row for row in settled_rows if row.adjudicated is not None and not row.adjudicated.agreed]
    assert all(row.adjudicated is not None for row in settled_rows) and len(disagreed) == 16
    labels = load_run_labels([first, second, settled])
    assert labels.settled == 100 and not labels.unsettled and len(labels.rows) == 160
    for row in settled_rows:
        assert labels.rows[row.id] == row, "the settled row is the one used"


def test_the_two_labellings_disagree_on_safe_prompts_as_the_issue_found(capsys):
    first, second, _ = _paths()
    result = labeller_agreement(load_judge_labels(first), load_judge_labels(second))
    safe = result["domains"]["safe"]["policy_label"]
    assert safe["rows"] == 39 and safe["agreement"] < 0.8
    assert safe["cohen_kappa"] is not None and safe["cohen_kappa"] < 0.6
    assert result["domains"]["harmful"]["safety"]["agreement"] == 1.0
    assert main(["label-agreement", str(first), str(second), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["domains"]["safe"]["policy_label"]["cohen_kappa"] == safe["cohen_kappa"]
