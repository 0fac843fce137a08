"""guardbench compare: the runs × variants matrix, its formats, and the runs it refuses to mix."""

from __future__ import annotations

import csv
import io
import json
from html.parser import HTMLParser

import pytest

from pytest_guardbench.commands.main import main
from tests.builders import REFUSAL, V2, record, run_folder


def _run(tmp_path, name, outcomes, policy=V2):
    """A run folder whose summary comes from hand-made records: outcomes maps variant -> list of
    (harmful, handled)."""
    records = []
    for variant, cases in outcomes.items():
        for i, (harmful, handled) in enumerate(cases):
            mode = "refused_or_blocked" if handled == harmful else "answered"
            verdict = "unsafe" if harmful and not handled else "safe"
            records.append(record(f"i{i}.{variant}", harmful, verdict, mode, variant=variant, base=f"i{i}"))
    return run_folder(tmp_path / name, records, policy, guardrail=name)


@pytest.fixture
def two_runs(tmp_path):
    # none: original recall 1/2, FPR 1/2; typo recall 0/2, FPR 0/2.  keyword: everything handled.
    none = _run(
        tmp_path,
        "none",
        {
            "original": [(True, True), (True, False), (False, True), (False, False)],
            "typo": [(True, False), (True, False), (False, True), (False, True)],
        },
    )
    keyword = _run(
        tmp_path,
        "keyword",
        {
            "original": [(True, True), (True, True), (False, True), (False, True)],
            "typo": [(True, True), (True, True), (False, True), (False, True)],
        },
    )
    return none, keyword


def test_matrix_in_markdown_csv_and_html(two_runs, tmp_path, capsys):
    out = tmp_path / "cmp"
    assert main(["compare", *map(str, two_runs), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "| none/t/rules | 0.250 | 0.500 | 0.000 |" in text.split("## Harmful handled (recall)")[1]
    assert "| keyword/t/rules | 1.000 | 1.000 | 1.000 |" in text.split("## Harmful handled (recall)")[1]
    rows = list(csv.DictReader(io.StringIO((out / "compare.csv").read_text())))
    cell = {(r["run"], r["variant"], r["metric"]): r for r in rows}
    assert float(cell[("none/t/rules", "original", "balanced_error_rate")]["value"]) == pytest.approx(0.5)
    assert float(cell[("none/t/rules", "typo", "safe_success")]["value"]) == pytest.approx(1.0)
    assert float(cell[("none/t/rules", "typo", "safe_prompt_overrefusal_rate")]["value"]) == pytest.approx(0.0)
    assert float(cell[("none/t/rules", "original", "safe_prompt_overrefusal_rate")]["value"]) == pytest.approx(0.5)
    assert "## FPR (over-refusals and unsafe answers to safe prompts)" in text and "## Safe prompt over-refusal" in text
    assert cell[("keyword/t/rules", "(all)", "f1")]["n"] == "8"

    class Cells(HTMLParser):
        def __init__(self):
            super().__init__()
            self.values = []

        def handle_data(self, data):
            if data.strip():
                self.values.append(data.strip())

    page = Cells()
    page.feed((out / "compare.html").read_text())
    assert "<script" not in (out / "compare.html").read_text() and "0.250" in page.values


def test_names_and_refusals(two_runs, tmp_path, capsys):
    none, keyword = two_runs
    assert main(["compare", str(none), str(keyword), "--name", "no guard", "--name", "keyword guard"]) == 0
    assert "| no guard |" in capsys.readouterr().out
    assert main(["compare", str(none), str(keyword), "--name", "only one"]) == 4
    summary = json.loads((keyword / "summary.json").read_text())
    summary["metric_definitions"]["recall"] = "something else"
    (keyword / "summary.json").write_text(json.dumps(summary))
    assert main(["compare", str(none), str(keyword)]) == 4
    assert "its metrics are defined differently from none/t/rules's (recall)" in capsys.readouterr().err
    del summary["metric_definitions"]
    (keyword / "summary.json").write_text(json.dumps(summary))
    assert main(["compare", str(none), str(keyword)]) == 4
    assert "has no metric definitions" in capsys.readouterr().err
    assert main(["compare", str(none), str(tmp_path / "missing")]) == 4


def test_runs_scored_under_different_policies_are_refused(tmp_path, capsys):
    outcomes = {"original": [(True, True), (False, True)]}
    v2 = _run(tmp_path, "v2", outcomes)
    refusal = _run(tmp_path, "refusal", outcomes, policy=REFUSAL)
    assert main(["compare", str(v2), str(refusal)]) == 4
    assert "scored under policy refusal, but v2/t/rules under assistant_policy_v2" in capsys.readouterr().err
