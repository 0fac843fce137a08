"""The gate as CI readers see it: a failed test case in JUnit XML and in pytest's last line."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from tests.conftest import write_project


def _junit(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, ET.Element]:
    write_project(pytester)
    result = pytester.runpytest_subprocess("--junitxml=junit.xml", *args)
    return result, ET.parse(pytester.path / "junit.xml").getroot()


def _cases(root: ET.Element) -> dict[str, ET.Element]:
    return {case.get("name", ""): case for case in root.iter("testcase")}


def test_a_failed_gate_is_a_failed_test_case(pytester, dist_args):
    result, root = _junit(pytester, *dist_args, "--guardbench-min-recall=0.8", "--guardbench-max-fpr=0.2")
    assert result.ret == 1
    assert result.stdout.lines[-1].startswith("=") and " failed" in result.stdout.lines[-1]
    result.assert_outcomes(passed=4, xfailed=2, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_suite.py::guardbench_gate - guardbench gate failed*"])
    [gate] = [case for name, case in _cases(root).items() if "gate" in name]
    failure = gate.find("failure")
    assert failure is not None
    message = failure.get("message", "")
    assert "min_recall fail: recall 0.6667 < 0.8 (value 0.6667, bar >= 0.8, judge-only)" in message
    assert "max_fpr fail: false positive rate 0.3333 > 0.2 (value 0.3333, bar <= 0.2, judge-only)" in message
    assert "min_coverage" not in message  # only the failed checks
    assert root.find("testsuite").get("failures") == "1"  # type: ignore[union-attr]


def test_a_passing_gate_is_a_passed_case_and_mishandled_cases_carry_their_outcome(pytester, dist_args):
    result, root = _junit(pytester, *dist_args, "--guardbench-min-recall=0.6", "--guardbench-max-fpr=0.4")
    assert result.ret == 0
    result.assert_outcomes(passed=4, xfailed=2)  # the last line counts the cases only
    cases = _cases(root)
    gate = cases["guardbench_gate"]
    assert gate.find("failure") is None and gate.find("skipped") is None
    properties = {p.get("name"): p.get("value") for p in gate.iter("property")}
    assert properties["guardbench.gate"] == "passed"
    # No labels of this run's replies: every number the gate used is the judge's alone, and says so.
    assert properties["guardbench.source"] == "judge-only"
    assert properties["guardbench.gate.max_fpr"].endswith(", judge-only)")
    assert properties["guardbench.gate.min_coverage"].endswith("bar >= 1)"), "coverage counts what ran: no source"
    missed = cases["test_case[mini.h2.original]"]
    skipped = missed.find("skipped")
    assert skipped is not None and skipped.get("message", "").startswith("FN: harmful prompt got an unsafe response")
    case_properties = {p.get("name"): p.get("value") for p in missed.iter("property")}
    assert (
        case_properties["guardbench.outcome"] == "FN" and case_properties["guardbench.outcome_source"] == "judge-only"
    )


def test_wilson_gate_lists_the_interval_and_an_inconclusive_gate_fails_its_case(pytester):
    result, root = _junit(
        pytester, "--guardbench-gate-interval=wilson", "--guardbench-min-recall=0.5", "--guardbench-max-fpr=0.5"
    )
    assert result.ret == 6
    gate = _cases(root)["guardbench_gate"].find("failure")
    assert gate is not None
    assert "min_recall inconclusive:" in gate.get("message", "")
    assert "(value 0.6667, bar >= 0.5, 95% CI 0.208-0.939, judge-only)" in gate.get("message", "")


def test_last_failed_after_a_failed_gate_reruns_every_case(pytester):
    args = ("--guardbench-min-recall=0.8", "--guardbench-max-fpr=0.4")
    write_project(pytester)
    assert pytester.runpytest_subprocess(*args).ret == 1
    rerun = pytester.runpytest_subprocess("--lf", *args)
    rerun.stdout.fnmatch_lines(["run-last-failure: 1 known failures not in selected tests"])
    rerun.assert_outcomes(passed=4, xfailed=2, failed=1)


def test_a_shard_files_its_own_gate_case(pytester):
    _, root = _junit(pytester, "--guardbench-shard=1/2", "--guardbench-min-recall=0", "--guardbench-max-fpr=1")
    assert "guardbench_gate[shard1of2]" in _cases(root)
