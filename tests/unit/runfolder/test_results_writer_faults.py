"""results.jsonl under faults: a file deleted under the run is noticed at the next record (not written
into the void), and a record holding half a surrogate pair is still one whole UTF-8 line."""

from __future__ import annotations

import json

import pytest

from pytest_guardbench.document.read import load_records
from pytest_guardbench.runfolder.folder import ReportWriteError, ResultsWriter, removed_on_failure
from tests.builders import record


def test_a_results_file_removed_mid_run_stops_the_next_record(tmp_path):
    writer = ResultsWriter(tmp_path / "results.jsonl")
    writer.write(record("p.a.original", True))
    (tmp_path / "results.jsonl").unlink()
    with pytest.raises(
        ReportWriteError, match=r"results\.jsonl: removed while the run was writing it; the record of p\.b\.original"
    ):
        writer.write(record("p.b.original", True))
    writer.close()


def test_a_lone_surrogate_is_written_as_u_fffd_on_one_whole_line_that_reads_back(tmp_path):
    half = record("p.a.original", True).model_copy(update={"prompt_text": "half \ud83d"})
    writer = ResultsWriter(tmp_path / "results.jsonl")
    writer.write(half)
    writer.close()
    line = (tmp_path / "results.jsonl").read_bytes().decode("utf-8")
    assert line.endswith("\n") and line.count("\n") == 1 and json.loads(line)["prompt_text"] == "half \ufffd"
    assert [r.case_id for r in load_records(tmp_path)] == ["p.a.original"]


def test_a_folder_a_command_was_writing_is_removed_when_it_fails(tmp_path):
    out = tmp_path / "new"
    with pytest.raises(RuntimeError), removed_on_failure(out):
        out.mkdir()
        (out / "summary.json").write_text("{")
        raise RuntimeError("failed part-way")
    assert not out.exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    with pytest.raises(RuntimeError), removed_on_failure(kept):
        raise RuntimeError("a folder that was there before is not ours to remove")
    assert kept.is_dir()
