"""report.html reads right: the confusion matrix's rows are the prompt's label and its columns how the
prompt was handled (TP/FN in the harmful row, TN/FP in the safe row), each gate check has its own
colour (a passed check is green when the gate failed), and the failed-case table starts on the first
screen. Read as a person sees it in headless Chromium when the machine has it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_guardbench.records import Case
from pytest_guardbench.results.figures import confusion_matrix
from pytest_guardbench.scoring.scorecard import scorecard_from_counts
from pytest_guardbench.results.html import render, write
from pytest_guardbench.document.summary import RunInfo, RunSummary, Selection, StackInfo
from pytest_guardbench.runfolder.finish import assemble_summary
from pytest_guardbench.document.gate import GateCheck, GateResult
from pytest_guardbench.scoring.metrics import summarise
from pytest_guardbench.settings.config import Thresholds
from tests.builders import V2, record
from pytest_guardbench.results.sources import UNCHECKED
from tests.chromium import evaluate_in_chromium, needs_chromium
from tests.unit.scoring.test_conversation_scoring import RECORDS as CONVERSATIONS

CHECKS = (
    GateCheck(
        name="min_recall", value=0.75, threshold=0.5, comparison=">=", status="pass", message="recall 0.75 >= 0.5"
    ),
    GateCheck(
        name="max_fpr",
        value=0.667,
        threshold=0.2,
        comparison="<=",
        status="fail",
        message="false positive rate 0.6667 > 0.2",
    ),
)


def _summary(records, checks=CHECKS) -> RunSummary:
    expected = [
        Case(
            case_id=r.case_id,
            pack="p",
            item_id=r.item_id,
            base_prompt_id=r.base_prompt_id,
            variant="original",
            prompt_text="q",
            is_harmful=r.is_harmful,
            label_source="is_harmful",
            category="Danger",
            source_file="f",
        )
        for r in records
    ]
    summary = assemble_summary(
        summarise(expected, records, V2),
        GateResult(checks=checks),
        run=RunInfo(run_id="r1"),
        stack=StackInfo(
            guardrail="g", tutor="t", judge="rules", malformed_policy="block", policy="assistant_policy_v2"
        ),
        selection=Selection(),
        thresholds=Thresholds(),
    )
    return RunSummary.model_validate(summary)


@pytest.fixture
def run():
    """TP 3, FN 1, TN 2, FP 4: every cell a different number, so a cell in the wrong place shows."""
    records = [record(f"tp{i}.original", True, "safe", "refused_or_blocked") for i in range(3)]
    records += [record("fn0.original", True, "unsafe", "answered")]
    records += [record(f"tn{i}.original", False, "safe", "answered") for i in range(2)]
    records += [record(f"fp{i}.original", False, "safe", "refused_or_blocked") for i in range(4)]
    return _summary(records), records


def _cells(svg: str) -> dict[str, tuple[str, str, str]]:
    """cell name -> (its row, its column, its count) as the SVG places them."""
    return {
        name: (row, column, count)
        for name, row, column, count in re.findall(
            r"<g data-matrix-cell='(\w+)' data-row='([^']+)' data-column='([^']+)'>.*?data-cell='\w+'>(\d+)<", svg
        )
    }


def test_matrix_rows_are_the_label_and_columns_how_it_was_handled():
    svg = confusion_matrix(scorecard_from_counts(tp=3, fp=4, tn=2, fn=1, harmful_unsafe=1, safe_overrefused=4), "S")
    assert _cells(svg) == {
        "TP": ("harmful prompt", "handled correctly", "3"),
        "FN": ("harmful prompt", "mishandled", "1"),
        "TN": ("safe prompt", "handled correctly", "2"),
        "FP": ("safe prompt", "mishandled", "4"),
    }
    assert ">handled correctly<" in svg and ">mishandled<" in svg and "incorrect" not in svg


def test_each_gate_check_has_its_colour_and_the_failed_cases_come_first(run):
    page = render(*run, V2)
    gate = page.split("<div id='gate'>", 1)[1].split("</div>", 1)[0]
    assert "<p class='gate-failed'><b>Gate failed</b>: 1 of 2 checks failed.</p>" in gate
    assert re.findall(r"<li class='check-(\w+)' data-check='(\w+)'", gate) == [
        ("pass", "min_recall"),
        ("fail", "max_fpr"),
    ]
    order = [
        page.index(mark)
        for mark in (
            "<div id='source' data-source='judge-only'>",
            "<div id='gate'>",
            "<table id='scorecards'>",
            "<table id='failed'",
            "class='matrix'",
            "<table id='per-variant'>",
            "<table id='sample'",
        )
    ]
    assert order == sorted(order), "source, gate, scorecards, failed cases, then the matrices and the rest"


def test_the_conversation_section_has_its_matrix_the_right_way_round():
    records = [r.model_copy(update={"category": "Danger"}) for r in CONVERSATIONS]
    section = render(_summary(records, ()), records, V2).split("<section id='conversations'>", 1)[1]
    card = _summary(records, ()).conversations.scorecards.system
    cells = _cells(section.split("</section>", 1)[0])
    assert cells["FN"] == ("harmful prompt", "mishandled", str(card.fn))
    assert cells["TN"] == ("safe prompt", "handled correctly", str(card.tn))


# Reads the page as drawn: each matrix cell's name and count with the row label beside it and the
# column heading above it (nearest by position, not by attribute), each gate check's colour, and
# where the failed-case table starts.
READ = """(function(){
  function box(e){ var r = e.getBoundingClientRect(); return {x: r.left + r.width / 2, y: r.top + r.height / 2}; }
  function nearest(list, key, value){ var best = null;
    list.forEach(function(e){ var d = Math.abs(box(e)[key] - value); if (best === null || d < best[0]) best = [d, e]; });
    return best[1].textContent; }
  var matrices = [];
  document.querySelectorAll('svg.matrix').forEach(function(svg){
    var rows = Array.prototype.slice.call(svg.querySelectorAll('text[data-row]'));
    var columns = Array.prototype.slice.call(svg.querySelectorAll('text[data-column]'));
    var cells = {};
    svg.querySelectorAll('g[data-matrix-cell]').forEach(function(g){
      var texts = g.querySelectorAll('text'), at = box(g.querySelector('rect'));
      cells[texts[1].textContent] = [nearest(rows, 'y', at.y), nearest(columns, 'x', at.x), texts[0].textContent]; });
    matrices.push([svg.getAttribute('aria-label'), cells]); });
  var checks = Array.prototype.map.call(document.querySelectorAll('#gate li'), function(li){
    return [li.dataset.status, getComputedStyle(li).color, li.textContent]; });
  var source = document.getElementById('source');
  return [matrices, checks, document.getElementById('failed-cases').getBoundingClientRect().top, window.innerHeight,
          source.getBoundingClientRect().bottom, source.textContent];
})()"""


def _read_in_chromium(page: Path, profile: Path, width: int, height: int) -> list:
    """READ evaluated in headless Chromium at width x height, once the page's own script has run."""
    values, errors = evaluate_in_chromium(page, profile, READ, window=(width, height))
    assert errors == [], errors
    return values[0]  # type: ignore[return-value]


@needs_chromium
@pytest.mark.parametrize(("width", "height"), [(1280, 800), (1920, 1080)])
def test_in_chromium_the_matrix_reads_right_the_checks_have_their_colours_and_the_failures_are_on_screen(
    run, tmp_path, width, height
):
    path = write(tmp_path, *run, V2)
    matrices, checks, failed_top, screen, source_bottom, source = _read_in_chromium(
        path, tmp_path / "profile", width, height
    )
    system = dict(matrices)["System (judge-only): confusion matrix"]
    assert system == {
        "TP": ["harmful prompt", "handled correctly", "3"],
        "FN": ["harmful prompt", "mishandled", "1"],
        "TN": ["safe prompt", "handled correctly", "2"],
        "FP": ["safe prompt", "mishandled", "4"],
    }
    assert [(status, colour) for status, colour, _ in checks] == [
        ("pass", "rgb(23, 110, 37)"),  # green
        ("fail", "rgb(176, 0, 32)"),  # red
    ]
    assert checks[0][2].startswith("✓ passed recall") and checks[1][2].startswith("✗ failed false positive rate")
    assert 0 < failed_top < screen, f"the failed cases start at {failed_top}px, below a {screen}px screen"
    assert source.startswith(UNCHECKED) and "guardbench audit reports/r1 --design random --sample" in source
    assert 0 < source_bottom < failed_top, "where the numbers come from is said above the fold, before the cases"
