"""The baseline run and the scorecard snapshot a run compares itself with are read before any case runs:
a corrupt one is one usage line naming the file and line, not a traceback after every call was made."""

from __future__ import annotations

import json

import pytest

from pytest_guardbench.runfolder.comparison_inputs import check_baseline, check_snapshot
from pytest_guardbench.settings.options import ConfigError
from tests.builders import record

GOOD_SNAPSHOT = {
    "policy": "assistant_policy_v2",
    "system": {"recall": 0.9, "false_positive_rate": 0.1, "balanced_error_rate": 0.1},
    "per_variant": {"typo": {"recall": 0.8}},
}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"system": {"recall": 0.9}', "line 1: not valid JSON"),
        ('{\n"system": {"recall": 0.9},\n}', "line 3: not valid JSON"),
        ("", "line 1: not valid JSON"),
        ("[]", r"\(top level\): Input should be a valid dictionary"),
        ('{"system": {"recall": "high"}}', "system.recall: Input should be a valid number"),
        ('{"system": {"recal": 0.9}}', "system.recal: Extra inputs are not permitted"),
        ('{"per_variant": {"typo": 3}}', "per_variant.typo: Input should be a valid dictionary"),
        ('{"sytem": {}}', "sytem: Extra inputs are not permitted"),
    ],
)
def test_a_corrupt_scorecard_snapshot_names_the_file_and_where(tmp_path, text, message):
    path = tmp_path / "scorecard.json"
    path.write_text(text)
    with pytest.raises(ConfigError, match=rf"--guardbench-scorecard-snapshot {path}: {message}"):
        check_snapshot(path)


def test_a_snapshot_as_written_is_accepted(tmp_path):
    path = tmp_path / "scorecard.json"
    path.write_text(json.dumps(GOOD_SNAPSHOT))
    check_snapshot(path)


def test_a_corrupt_baseline_names_the_line(tmp_path):
    (tmp_path / "results.jsonl").write_text(record("a.b.original", True).json_line() + '{"case_id": "x"}\n')
    with pytest.raises(ConfigError, match=r"--guardbench-baseline .*results.jsonl:2: not a case record"):
        check_baseline(tmp_path)
    (tmp_path / "results.jsonl").write_text(record("a.b.original", True).json_line())
    check_baseline(tmp_path)
