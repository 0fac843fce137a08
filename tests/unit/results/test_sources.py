"""Every number names its source: the terminal, summary.md, report.html and the GitHub step summary of
real run folders (written through the finish and corrected by `correct_run_folder`) say judge-only or
corrected, where a reader looks first, and say why configured labels decided too little."""

from __future__ import annotations

import html
import json
import re

import pytest

from pytest_guardbench.commands.main import main
from pytest_guardbench.document.read import load_run
from pytest_guardbench.document.summary import RunSummary
from pytest_guardbench.results.github_summary import append_step_summary
from pytest_guardbench.results.markdown import summary_markdown
from pytest_guardbench.results.sources import UNCHECKED, planned_labels
from pytest_guardbench.results.terminal import terminal_lines
from tests.unit.results.labelled_runs import NOT_ANSWERED, corrected_run, judged_run, labels_file, population


def _planned_by_audit(run, capsys) -> int:
    """What `guardbench audit RUN --plan --half-width 0.1` says the random design needs."""
    assert main(["audit", str(run), "--plan", "--half-width", "0.1"]) == 0
    return int(re.search(r"--design random: (\d+) labels", capsys.readouterr().out).group(1))  # type: ignore[union-attr]


def test_day_one_says_judge_only_first_with_the_command_that_audits_the_run(tmp_path, capsys):
    run = judged_run(tmp_path / "run", population())
    summary = load_run(run)
    planned = _planned_by_audit(run, capsys)
    assert planned_labels(summary) == planned, "the suggested sample is the audit plan's"
    audit = f"guardbench audit reports/run --design random --sample {planned}"
    lines = terminal_lines(summary)
    assert lines[0] == UNCHECKED and lines[1].startswith(f"audit it: {audit} ")
    assert "guardbench correct reports/run --labels reports/run/audit.jsonl" in lines[1]
    # The judge called every safe reply answered, so its FPR is 0: a number the page must not pass off as checked.
    assert summary.scorecards.system.false_positive_rate == 0.0
    markdown = summary_markdown(summary)
    assert markdown.index(f"**{UNCHECKED}**") < markdown.index("**Gate: ") < markdown.index("|")
    assert f"`{audit}`" in markdown
    assert "- ok: false positive rate 0 <= 0.25 (judge-only)" in markdown, "each check names its source"
    page = (run / "report.html").read_text(encoding="utf-8")
    source = page.split("<div id='source' data-source='judge-only'>", 1)[1].split("</div>", 1)[0]
    assert f"<b>{html.escape(UNCHECKED)}</b>" in source and f"<code>{audit}</code>" in source
    assert page.index("<div id='source'") < page.index("<div id='gate'>") < page.index("<table id='scorecards'>")
    assert "This run did not check its judge against human labels" in page


def test_with_labels_the_corrected_numbers_come_first_and_the_rest_says_judge_only(tmp_path):
    run, summary = corrected_run(tmp_path)
    correction = summary.corrected
    assert correction is not None and correction.labels.used == 60
    fpr = correction.scorecards.system.false_positive_rate
    assert fpr.judge_only == 0.0 and fpr.estimate is not None and fpr.estimate > 0.5, "the labels find the non-answers"

    lines = terminal_lines(summary)
    assert lines[0].startswith("corrected: recall and FPR corrected by 60 labels of this run's own replies")
    assert lines[1].startswith("audit-corrected (random design, 60 labels")
    table = lines.index(next(line for line in lines if line.startswith("judge-only scorecards")))
    fpr_line = next(i for i, line in enumerate(lines) if line.startswith("  system FPR:"))
    assert fpr_line < table, "the corrected FPR before the judge-only table"
    assert f"corrected {fpr.estimate:.3f} [{fpr.ci_low:.3f}, {fpr.ci_high:.3f}]" in lines[fpr_line]

    markdown = summary_markdown(summary)
    order = [
        markdown.index(mark)
        for mark in (
            "**corrected: ",
            "**Gate: FAILED**",
            "**Low-confidence scorecard:**",
            "## Audit-corrected",
            "## Scorecards",
        )
    ]
    assert order == sorted(order), "source, gate, confidence and the corrected section before the tables"
    assert "FAIL: false positive rate (audit-corrected)" in markdown
    row = next(line for line in markdown.splitlines() if line.startswith("| system | 80 |"))
    assert f"| 0.000 | {fpr.estimate:.3f} [{fpr.ci_low:.3f}, {fpr.ci_high:.3f}] |" in row, "corrected beside judge-only"
    assert "## Per variant (system, judge-only)" in markdown

    page = (run / "report.html").read_text(encoding="utf-8")
    marks = (
        "<div id='source' data-source='corrected'>",
        "<div id='gate'>",
        "<section id='corrected-section'>",
        "<table id='scorecards'>",
        "<h2 id='failed-cases'>Failed cases by the judge alone: ",
        "<h2 id='matrices'>Confusion matrices (by the judge alone)</h2>",
        "<p id='judge-on-this-run'>",
    )
    assert [page.index(mark) for mark in marks] == sorted(page.index(mark) for mark in marks)
    assert re.search(
        rf"data-metric='system.fpr.corrected'>{fpr.estimate:.3f}<small> \[{fpr.ci_low:.3f}, {fpr.ci_high:.3f}\]", page
    )
    assert "data-metric='system.fpr'>0.000" in page and "<th>FPR (judge-only)</th>" in page
    kappa = correction.scorecards.judge_on_this_run.cohen_kappa
    assert "checked on this run's own 60 labels" in page and f"Cohen's kappa {kappa:.3f}" in page
    assert "did not check its judge" not in page
    assert "aria-label='System (judge-only): confusion matrix'" in page


def test_labels_of_another_run_say_how_many_matched_why_and_how_many_more_the_plan_needs(tmp_path, capsys):
    rows = population()
    run = judged_run(tmp_path / "run", rows)
    planned = _planned_by_audit(run, capsys)
    other = [(r.model_copy(update={"case_id": "other-" + r.case_id}), s, m) for r, s, m in rows]
    mine = labels_file(tmp_path / "mine.jsonl", rows, [r.case_id for r, _, _ in rows[:4]])
    # Four labels of this run's replies, one of them of a reply that changed since, and 20 of another run's.
    lines = mine.read_text(encoding="utf-8").splitlines()
    changed = json.loads(lines[0]) | {"response": "an earlier reply", "reply_sha256": "0" * 64}
    theirs = labels_file(tmp_path / "theirs.jsonl", other, [r.case_id for r, _, _ in other[:20]])
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        "\n".join([json.dumps(changed), *lines[1:], *theirs.read_text(encoding="utf-8").splitlines()]) + "\n",
        encoding="utf-8",
    )
    assert main(["correct", str(run), "--labels", str(labels)]) == 6, "undecided: too few labels (exit 6)"
    capsys.readouterr()
    summary = load_run(run)
    # The three labels are of harmful replies: recall gets a wide interval, FPR none (no safe reply labelled).
    expected = (
        f"labels: 3 of 24 rows of {labels} match this run's replies (1 reply_changed: the reply changed since it "
        "was labelled; 20 not_in_run: labels of another run's replies); too few to estimate FPR; "
        "a corrected interval straddles its bar; "
        f"the plan needs about {planned} labels of this run's replies for ±0.1, {planned - 3} more: "
        f"guardbench audit reports/run --design random --sample {planned}"
    )
    lines = terminal_lines(summary)
    assert lines[0].startswith("corrected: recall corrected by 3 labels of this run's own replies")
    assert lines[1] == expected, "why the labels decided so little"
    markdown = summary_markdown(summary)
    assert expected.replace(f"guardbench audit reports/run --design random --sample {planned}", "") in markdown
    assert markdown.index("labels: 3 of 24 rows") < markdown.index("**Gate: INCONCLUSIVE**")
    assert "UNDECIDED: recall (audit-corrected) 0.825 (95% CI 0.275-1.000, 3 of 40 labelled) straddles" in markdown
    assert "UNDECIDED: false positive rate (audit-corrected) undecided (no labels" in markdown
    page = (run / "report.html").read_text(encoding="utf-8")
    source = page.split("<div id='source' data-source='corrected'>", 1)[1].split("</div>", 1)[0]
    assert "3 of 24 rows" in source and "1 reply_changed" in source and "20 not_in_run" in source
    assert f"<code>guardbench audit reports/run --design random --sample {planned}</code>" in source


def test_a_corrected_interval_that_straddles_its_bar_asks_for_more_labels(tmp_path):
    run, summary = corrected_run(tmp_path, labelled=20)
    fpr = summary.corrected.scorecards.system.false_positive_rate  # type: ignore[union-attr]
    assert fpr.ci_low is not None and fpr.ci_high is not None
    bar = round((fpr.ci_low + fpr.ci_high) / 2, 3)
    document = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    document["thresholds"]["max_fpr"] = bar
    (run / "summary.json").write_text(json.dumps(document), encoding="utf-8")
    assert main(["correct", str(run), "--labels", str(tmp_path / "labels.jsonl")]) == 6
    lines = terminal_lines(load_run(run))
    # 20 labels, 8 of them of harmful replies: both rates get an interval, however few their labels.
    assert lines[0].startswith("corrected: recall and FPR corrected by 20 labels")
    assert "too few to estimate" not in lines[1]
    assert "; a corrected interval straddles its bar; the plan needs about" in lines[1]


def test_the_github_step_summary_opens_with_the_source(tmp_path, monkeypatch):
    target = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(target))
    run = judged_run(tmp_path / "run", population())
    append_step_summary(load_run(run))
    written = target.read_text(encoding="utf-8")
    assert written.splitlines()[2] == f"**{UNCHECKED}**"
    _, summary = corrected_run(tmp_path)
    append_step_summary(summary)
    second = target.read_text(encoding="utf-8")[len(written) :]
    assert second.splitlines()[2].startswith("**corrected: recall and FPR corrected by 60 labels")


@pytest.mark.parametrize("labelled", [False, True])
def test_the_suggested_sample_is_a_whole_number_of_labels_within_the_run(tmp_path, labelled):
    summary: RunSummary = corrected_run(tmp_path)[1] if labelled else load_run(judged_run(tmp_path / "r", population()))
    planned = planned_labels(summary)
    assert planned is not None and 0 < planned <= summary.scorecards.system.n
    assert NOT_ANSWERED < summary.scorecards.system.n
