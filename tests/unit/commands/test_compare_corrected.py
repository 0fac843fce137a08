"""guardbench compare says which numbers it shows: the corrected ones when every run was corrected by
labels of its own replies, judge-only otherwise; a corrected run beside a judge-only one is refused
(exit 4, one line) unless --allow-mixed-sources, which shows every run's judge-only numbers and says so."""

from __future__ import annotations

import csv
import io

import pytest

from pytest_guardbench.commands.main import main
from pytest_guardbench.document.read import load_run
from tests.unit.results.labelled_runs import corrected_run, judged_run, population

CORRECTED_LINE = "**Numbers: recall, FPR, safe success and BER audit-corrected by each run's labels of its own replies"
JUDGE_ONLY_LINE = "**Numbers: judge-only (counted from each run's judge's verdicts alone).**"


def _section(text: str, title: str) -> str:
    return text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def test_corrected_runs_are_compared_on_their_corrected_numbers(tmp_path, capsys):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, _ = corrected_run(tmp_path / "a", labelled=60)
    second, _ = corrected_run(tmp_path / "b", labelled=70)
    out = tmp_path / "cmp"
    assert main(["compare", str(first), str(second), "--name", "a", "--name", "b", "--out", str(out)]) == 0
    text = capsys.readouterr().out.split("\n", 1)[1]  # after the "wrote ..." line: the markdown
    assert text.split("\n", 1)[0].startswith(CORRECTED_LINE)
    fpr = load_run(first).corrected.scorecards.system.false_positive_rate  # type: ignore[union-attr]
    judged = load_run(first).scorecards.system.false_positive_rate
    table = _section(text, "FPR (over-refusals and unsafe answers to safe prompts) [corrected]")
    row = next(line for line in table.splitlines() if line.startswith("| a |"))
    assert row.startswith(f"| a | {fpr.estimate:.3f} [{fpr.ci_low:.3f}, {fpr.ci_high:.3f}] |") and row.endswith(
        "| corrected |"
    )
    assert judged == 0.0 and f"{fpr.estimate:.3f}" != "0.000", "the corrected FPR, not the judge's 0"
    assert "## F1 [judge-only]" in text and "## Safe prompt over-refusal [judge-only]" in text
    rows = {
        (r["run"], r["variant"], r["metric"]): r for r in csv.DictReader(io.StringIO((out / "compare.csv").read_text()))
    }
    cell = rows[("a", "(all)", "false_positive_rate")]
    assert cell["source"] == "corrected" and float(cell["value"]) == pytest.approx(fpr.estimate, abs=1e-6)
    assert (float(cell["ci_low"]), float(cell["ci_high"])) == pytest.approx((fpr.ci_low, fpr.ci_high), abs=1e-6)
    assert rows[("a", "(all)", "f1")]["source"] == "judge-only" and rows[("a", "(all)", "f1")]["ci_low"] == ""
    safe = rows[("a", "(all)", "safe_success")]
    assert float(safe["value"]) == pytest.approx(1 - fpr.estimate, abs=1e-6)
    assert float(safe["ci_high"]) == pytest.approx(1 - fpr.ci_low, abs=1e-6)
    page = (out / "compare.html").read_text(encoding="utf-8")
    assert "<p id='sources' data-corrected='yes'>" in page
    assert "data-metric='false_positive_rate' data-source='corrected'" in page
    assert "data-metric='f1' data-source='judge-only'" in page


def test_a_corrected_run_beside_a_judge_only_one_is_refused_unless_allowed(tmp_path, capsys):
    (tmp_path / "a").mkdir()
    labelled, _ = corrected_run(tmp_path / "a")
    judged = judged_run(tmp_path / "judged", population())
    args = ["compare", str(labelled), str(judged), "--name", "labelled", "--name", "judged"]
    assert main(args) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "labelled corrected by labels of its own replies, judged judge-only" in err[0]
    assert "--allow-mixed-sources" in err[0]
    assert main([*args, "--allow-mixed-sources"]) == 0
    captured = capsys.readouterr()
    assert captured.out.split("\n", 1)[0] == JUDGE_ONLY_LINE
    assert "every run's judge-only numbers are shown" in captured.err
    table = _section(captured.out, "FPR (over-refusals and unsafe answers to safe prompts) [judge-only]")
    assert "| labelled | 0.000 |" in table, "the judge's FPR of the corrected run, said to be judge-only"


def test_judge_only_runs_say_so_in_every_format(tmp_path, capsys):
    first = judged_run(tmp_path / "first", population())
    second = judged_run(tmp_path / "second", population(seed=6))
    out = tmp_path / "cmp"
    assert main(["compare", str(first), str(second), "--name", "x", "--name", "y", "--out", str(out)]) == 0
    text = capsys.readouterr().out.split("\n", 1)[1]
    assert text.split("\n", 1)[0] == JUDGE_ONLY_LINE and "[corrected]" not in text
    assert all(row["source"] == "judge-only" for row in csv.DictReader(io.StringIO((out / "compare.csv").read_text())))
    assert "<p id='sources' data-corrected='no'>" in (out / "compare.html").read_text(encoding="utf-8")
