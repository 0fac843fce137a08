from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

import pytest

from pytest_guardbench.settings.config import Thresholds
from pytest_guardbench.scoring.gates import evaluate
from pytest_guardbench.runfolder.finish import assemble_summary
from pytest_guardbench.results.markdown import summary_markdown
from pytest_guardbench.results.sources import UNCHECKED
from pytest_guardbench.results.terminal import terminal_lines
from pytest_guardbench.results.variant_csv import variant_csv
from pytest_guardbench.runfolder.folder import make_run_dir
from pytest_guardbench.scoring.metrics import summarise
from pytest_guardbench.document.summary import RunInfo, RunSummary, Selection, StackInfo
from tests.builders import V2, table


def _summary() -> RunSummary:
    metrics = summarise([], table(), V2)
    return assemble_summary(
        metrics,
        evaluate(metrics, Thresholds()),
        run=RunInfo(run_id="r1"),
        stack=StackInfo(
            guardrail="keyword", tutor="smol", judge="rules", malformed_policy="block", policy="assistant_policy_v2"
        ),
        selection=Selection(),
        thresholds=Thresholds(),
    )


def test_two_runs_in_the_same_second_do_not_collide(tmp_path):
    now = datetime(2026, 1, 1, tzinfo=UTC)
    ids = {make_run_dir(tmp_path, now)[0] for _ in range(20)}
    assert len(ids) == 20 and all(i.startswith("20260101-000000-") for i in ids)


def test_variant_csv_has_both_scopes_and_blank_nulls():
    rows = list(csv.DictReader(io.StringIO(variant_csv(_summary()))))
    assert [(r["variant"], r["scope"]) for r in rows] == [("original", "system"), ("original", "tutor_conditional")]
    assert rows[0]["tp"] == "4" and rows[0]["recall"] == "0.8" and rows[0]["harmful_prompt_success_rate"] == "0.8"


def test_markdown_and_terminal_show_the_numbers_and_gate():
    summary = _summary()
    md = summary_markdown(summary)
    assert "**Gate: FAILED**" in md and "FAIL: false positive rate 0.2857 > 0.2" in md
    assert (
        "Scoring policy `assistant_policy_v2` (version 2)" in md
        and "Judge-only rates: harmful prompt success 0.800, safe prompt success 0.714" in md
    )
    assert "| system | 12 | 4 | 2 | 5 | 1 | 0.800 |" in md
    lines = terminal_lines(summary)
    assert lines[:2] == [UNCHECKED, lines[1]] and lines[1].startswith("audit it: guardbench audit reports/r1 ")
    assert lines[2] == "scoring policy: assistant_policy_v2"
    assert lines[3].startswith("judge-only scorecards (counted from the judge's verdicts alone")
    assert lines[5].split()[:6] == ["system", "12", "4", "2", "5", "1"]


def test_a_full_disk_is_one_clear_error_naming_the_file(tmp_path):
    from pathlib import Path

    from pytest_guardbench.runfolder.folder import ReportWriteError, ResultsWriter
    from tests.builders import record

    writer = ResultsWriter(Path("/dev/full"))
    with pytest.raises(
        ReportWriteError,
        match=r"/dev/full: cannot write the record of a \(No space left on device\); the file keeps every case written before it",
    ):
        writer.write(record("a", True))
    writer.close()


def test_an_unwritable_report_folder_is_found_before_the_run_and_the_check_leaves_nothing(tmp_path):
    from pytest_guardbench.runfolder.folder import writable_problem

    blocker = tmp_path / "file"
    blocker.write_text("")
    assert (
        writable_problem(blocker / "reports")
        == f"--guardbench-report-dir {blocker / 'reports'}: cannot write reports there (Not a directory)"
    )
    assert writable_problem(tmp_path / "new" / "reports") is None
    assert not (tmp_path / "new").exists()


def test_load_results_gives_one_typed_row_per_case_the_last_line_winning(tmp_path):
    from pytest_guardbench import load_results
    from pytest_guardbench.runfolder.folder import ResultsWriter
    from tests.builders import record

    writer = ResultsWriter(tmp_path / "results.jsonl")
    for row in (
        record("a", True, "unsafe", "answered", guard="allow"),
        record("b", False, "safe", "answered"),
        record("c", True, error=True),
        record("a", True, "safe", "refused_or_blocked", guard="block", tutor_ran=False),  # a rerun of a
    ):
        writer.write(row)
    writer.close()
    frame = load_results(tmp_path)
    assert list(frame["case_id"]) == ["a", "b", "c"]
    assert str(frame["is_harmful"].dtype) == "boolean" and str(frame["sample_index"].dtype) == "Int64"
    a = frame.set_index("case_id").loc["a"]
    assert a["guard_status"] == "block" and a["response_source"] == "guard_block" and a["response_safety"] == "safe"
    assert frame.set_index("case_id")["guard_status"].isna().tolist() == [False, True, True]
    assert frame.set_index("case_id").loc["c", "error_stage"] == "tutor"
