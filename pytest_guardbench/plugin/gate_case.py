"""The gate as a test case: CI readers (JUnit tabs, pytest's last line) see a failed gate as a
failed test, not only as an exit status.

The gate is known only after every case, so no collected item can carry it. The controller makes the
case's reports itself at its session end and hands them to `pytest_runtest_logreport`, before the
JUnit plugin writes its file: junitxml, the terminal's counts and any other reporter see them as
they see a test's reports."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pytest
from _pytest._code.code import ReprFileLocation, TerminalRepr
from _pytest._io import TerminalWriter

from pytest_guardbench.document.gate import GateCheck
from pytest_guardbench.document.summary import RunSummary
from pytest_guardbench.results.sources import CORRECTED, JUDGE_ONLY, check_source, labelled

GATE_TEST_NAME = "guardbench_gate"
# Set on the gate case's reports so our pytest_report_teststatus can tell them apart.
GATE_REPORT_ATTR = "guardbench_gate"


def gate_nodeid(suite_path: str | None, shard: tuple[int, int] | None) -> str:
    """`<suite file>::guardbench_gate`, with the shard in brackets so that the JUnit files of a
    sharded run, read together, keep one gate case per shard. No item has this id, so `--lf` after
    a failed gate finds none of its failures among the items and reruns them all, which a gate needs."""
    name = GATE_TEST_NAME + (f"[shard{shard[0]}of{shard[1]}]" if shard else "")
    return f"{suite_path or 'guardbench'}::{name}"


def check_line(check: GateCheck, source: str | None = None) -> str:
    """One check as the failure lists it: its name, its message, and value, bar and interval as numbers,
    with where the number comes from (`judge-only` or `corrected`) when it comes from the judge or labels."""
    value = "undefined" if check.value is None else f"{check.value:.4g}"
    interval = f", 95% CI {check.interval[0]:.3f}-{check.interval[1]:.3f}" if check.interval else ""
    said = f", {source}" if source else ""
    return (
        f"{check.name} {check.status}: {check.message} "
        f"(value {value}, bar {check.comparison} {check.threshold:g}{interval}{said})"
    )


@dataclass(eq=False)
class GateFailure(TerminalRepr):
    """The failed gate's longrepr: `reprcrash.message` is what JUnit's `<failure message>` and the
    short summary show (every failed or undecided check), the text is the whole list."""

    headline: str
    lines: list[str]

    @property
    def reprcrash(self) -> ReprFileLocation:
        return ReprFileLocation(path=GATE_TEST_NAME, lineno=0, message=f"{self.headline}: {'; '.join(self.lines)}")

    def toterminal(self, tw: TerminalWriter) -> None:
        tw.line(self.headline + ":", red=True, bold=True)
        for line in self.lines:
            tw.line(f"  {line}", red=True)


class GateReport(pytest.TestReport):
    """A passed gate is written to JUnit but left out of pytest's last line, which counts the cases;
    a failed one is counted there ("1 failed", in red)."""

    @property
    def count_towards_summary(self) -> bool:
        return not self.passed


def gate_reports(nodeid: str, summary: RunSummary) -> list[pytest.TestReport]:
    """The gate case's call and teardown reports. A failed or inconclusive gate fails the case: both
    make the run's exit status non-zero (1 or 6), so neither may look green. Its properties say where
    the numbers come from: `guardbench.source` for the run (corrected when labels of its own replies
    corrected recall or FPR), and each check's line its own."""
    path, _, name = nodeid.partition("::")
    gate = summary.gate
    failing = gate.failures + gate.undecided

    def line(check: GateCheck) -> str:
        return check_line(check, check_source(summary, check))

    properties = [
        ("guardbench.gate", gate.verdict),
        ("guardbench.source", CORRECTED if labelled(summary) else JUDGE_ONLY),
    ] + [(f"guardbench.gate.{c.name}", line(c)) for c in gate.checks]

    def report(when: Literal["call", "teardown"], longrepr: GateFailure | None) -> GateReport:
        made = GateReport(
            nodeid=nodeid,
            location=(path, None, name),
            keywords={name: 1},
            outcome="failed" if longrepr else "passed",
            longrepr=longrepr,
            when=when,
            user_properties=properties,
        )
        setattr(made, GATE_REPORT_ATTR, True)
        return made

    failure = None
    if failing:
        headline = f"guardbench gate {gate.verdict}: {len(failing)} of {len(gate.checks)} checks"
        failure = GateFailure(headline, [line(c) for c in failing])
    return [report("call", failure), report("teardown", None)]


def gate_teststatus(report: pytest.TestReport, reporting: bool) -> tuple[str, str, str] | None:
    """While its reports go round (`reporting`), the gate case prints no letter or word after the
    cases' dots, which have reached 100%; it is counted under its category. Afterwards (the short
    summary) it has its word, FAILED or PASSED."""
    if not getattr(report, GATE_REPORT_ATTR, False):
        return None
    if report.when != "call":
        return "", "", ""
    category = "failed" if report.failed else "passed"
    return category, "", "" if reporting else category.upper()
