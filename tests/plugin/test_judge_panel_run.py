"""A run judged by a panel, each member asked three times: the records keep every member's verdict,
judge_quality names the judge and reports each member, the summary counts the split verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import SCRIPTED_TUTOR_CONFTEST, read_summary, write_project

LABELS = Path(__file__).resolve().parents[2] / "pytest_guardbench" / "datasets" / "judge_labels_v1.jsonl"

# A second and third rules judge under other names, so the panel has three distinct members.
MORE_JUDGES = """
from pytest_guardbench.judges.rules import RulesJudge

def pytest_guardbench_register_judges(registry):
    registry.register("rules-b", lambda options: RulesJudge(name="rules-b"), "Rules judge under another name (tests only).")
    registry.register("rules-c", lambda options: RulesJudge(name="rules-c"), "Rules judge under another name (tests only).")
"""


@pytest.mark.parametrize("dist", [["-p", "no:xdist"], ["-n", "2"]], ids=["no_xdist", "n2"])
def test_a_panel_run_keeps_members_and_reports_each(pytester, dist):
    write_project(pytester)
    pytester.makeconftest(SCRIPTED_TUTOR_CONFTEST + MORE_JUDGES)
    result = pytester.runpytest_subprocess(
        "--judge=rules,rules-b,rules-c",
        "--guardbench-judge-samples=3",
        f"--guardbench-judge-check={LABELS}",
        "--guardbench-min-recall=0",
        "--guardbench-max-fpr=1",
        *dist,
    )
    assert result.ret == 0, result.stdout.str()
    summary = read_summary(pytester)
    assert summary["stack"]["judge"] == "rules,rules-b,rules-c" and summary["stack"]["judge_samples"] == 3
    quality = summary["judge_quality"]
    assert len(quality["judge_id"]) == 12 and quality["judge_identity"]["samples"] == 3
    assert [m["name"] for m in quality["judge_identity"]["panel"]] == ["rules", "rules-b", "rules-c"]
    assert quality["member_disagreement"]["rate"] == 0.0  # deterministic members never split
    assert summary["coverage"]["judge_disagreement"]["rate"] == 0.0
    [run] = (pytester.path / "reports").iterdir()
    records = [json.loads(line) for line in (run / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    # Every record names the judge that labelled it, by the id the summary and the judge check give it.
    assert summary["stack"]["judge_id"] == quality["judge_id"]
    assert {r["judge_id"] for r in records if r["judge"] is not None} == {quality["judge_id"]}
    record = records[0]
    samples = record["judge"]["members"]
    assert len(samples) == 3 and [m["judge"] for m in samples[0]["members"]] == ["rules", "rules-b", "rules-c"]


def test_an_even_panel_is_a_usage_error(pytester):
    write_project(pytester)
    result = pytester.runpytest_subprocess("--judge=rules,offline", "-p", "no:xdist")
    assert result.ret == 4
    assert (
        "--judge=rules,offline: a judge panel needs an odd number of judges"
        in result.stdout.str() + result.stderr.str()
    )
