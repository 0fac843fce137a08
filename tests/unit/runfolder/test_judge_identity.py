"""Every record names the judge that labelled it (`judge_id`), the summary names the one judge its
records name, and merge, compare, rejudge and judge-quality go by that id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_guardbench.commands.main import main
from pytest_guardbench.judges.rules import RulesJudge
from pytest_guardbench.records import CaseRecord
from pytest_guardbench.results.markdown import summary_markdown
from pytest_guardbench.document.summary import RunInfo
from pytest_guardbench.document.read import iter_records, load_run
from pytest_guardbench.run.judge_quality import judge_id, judge_identity
from pytest_guardbench.runfolder.merge import merge_runs
from pytest_guardbench.runfolder.rejudge import rejudge_run
from pytest_guardbench.runfolder.rescored import write_rescored_run
from tests.builders import V2, record

LABELS = Path(__file__).resolve().parents[3] / "pytest_guardbench" / "datasets" / "judge_labels_v1.jsonl"


def _run(folder: Path, judge_ids: list[str | None], first: int = 0) -> Path:
    """A run folder written by the finish step from hand-made records, the i-th labelled by judge_ids[i]."""
    records = [
        record(
            f"c{first + i}.original", i % 2 == 0, "safe", "refused_or_blocked" if i % 2 == 0 else "answered"
        ).model_copy(update={"judge_id": named})
        for i, named in enumerate(judge_ids)
    ]
    write_rescored_run(
        folder, records, None, run=RunInfo(run_id=folder.name, judge="j"), manifest={}, meta=None, policy=V2
    )
    return folder


def test_a_record_written_before_judge_ids_loads_without_one():
    line = record("c0.original", True).json_line()
    old = json.loads(line)
    del old["judge_id"]
    assert CaseRecord.model_validate_json(json.dumps(old)).judge_id is None


def test_the_summary_names_the_one_judge_its_records_name(tmp_path):
    summary = load_run(_run(tmp_path / "one", ["aaa", "aaa", None]))  # a record with no verdict names none
    assert summary.stack.judge_id == summary.judge_id == "aaa"
    assert not any("different judges" in w for w in summary.warnings)
    assert "judge `j` (id `aaa`)" in summary_markdown(summary)


def test_records_of_two_judges_name_none_and_warn(tmp_path):
    summary = load_run(_run(tmp_path / "two", ["aaa", "bbb"]))
    assert summary.stack.judge_id is None
    assert any("labelled by 2 different judges (aaa, bbb)" in w for w in summary.warnings)


def test_merge_refuses_runs_judged_by_different_judges_and_accepts_the_same(tmp_path, capsys):
    same = [_run(tmp_path / "s1", ["aaa", "aaa"]), _run(tmp_path / "s2", ["aaa", "aaa"], first=2)]
    merged = load_run(merge_runs(same, tmp_path / "merged"))
    assert merged.stack.judge_id == "aaa" and merged.coverage.scored.count == 4
    other = _run(tmp_path / "s3", ["bbb", "bbb"], first=2)
    with pytest.raises(ValueError, match=r"s3: judged by judge bbb, but .*s1 by aaa"):
        merge_runs([same[0], other], tmp_path / "refused")
    assert main(["merge", str(same[0]), str(other), "--out", str(tmp_path / "refused_cli")]) == 4
    assert "judged by judge bbb" in capsys.readouterr().err
    assert not (tmp_path / "refused_cli").exists()


def test_compare_refuses_runs_judged_by_different_judges_unless_asked(tmp_path, capsys):
    first, second = _run(tmp_path / "a", ["aaa", "aaa"]), _run(tmp_path / "b", ["bbb", "bbb"])
    assert main(["compare", str(first), str(second), "--name", "a", "--name", "b"]) == 4
    assert "b was judged by judge bbb, but a by aaa" in capsys.readouterr().err
    assert main(["compare", str(first), str(second), "--name", "a", "--name", "b", "--mixed-judges"]) == 0
    out, err = capsys.readouterr()
    assert "warning: the runs were judged by different judges (a: j (aaa), b: j (bbb))" in err
    numbers, warning = out.split("\n\n")[:2]  # the line saying which numbers, then the warning
    assert numbers.startswith("**Numbers: ") and warning.startswith(
        "**Warning:** the runs were judged by different judges"
    )
    same = _run(tmp_path / "c", ["aaa", "aaa"])
    assert main(["compare", str(first), str(same), "--name", "a", "--name", "c"]) == 0
    assert "Warning" not in capsys.readouterr().out


def test_rejudge_names_the_new_judge_on_every_record_it_judged(tmp_path, capsys):
    source = _run(tmp_path / "run", ["old", "old", "old"])
    assert main(["rejudge", str(source), "--judge", "rules", "--judge-samples", "3"]) in (0, 1)
    [out] = [d for d in source.iterdir() if d.name.startswith("rejudged-rules-")]
    rules_id = judge_id(judge_identity(RulesJudge(), None) | {"samples": 3})
    assert f"judge id {rules_id}" in capsys.readouterr().out
    assert {r.judge_id for r in iter_records(out)} == {rules_id}
    summary = load_run(out)
    assert (summary.stack.judge, summary.stack.judge_id, summary.stack.judge_samples) == ("rules", rules_id, 3)
    assert summary.coverage.judge_disagreement is not None
    assert summary.coverage.judge_disagreement.count == 0  # the rules judge answers alike every time
    assert "Judge disagreement: 0 majority verdict(s)" in (out / "summary.md").read_text(encoding="utf-8")
    assert "asked 3 times per response" in (out / "summary.md").read_text(encoding="utf-8")
    # Asked once, the stack says nothing of samples and the id is the plain judge's.
    once = load_run(rejudge_run(source, "rules", root=tmp_path))
    assert once.stack.judge_samples is None and once.stack.judge_id == judge_id(judge_identity(RulesJudge(), None))


def test_judge_quality_asks_k_times_and_reports_the_disagreement(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["judge-quality", str(LABELS), "--judge", "rules", "--judge-samples", "3", "--json"]) in (0, 1)
    result = json.loads(capsys.readouterr().out)
    assert result["judge_identity"]["samples"] == 3
    assert result["member_disagreement"]["count"] == 0 and result["member_disagreement"]["of"] == result["rows"]
    assert result["judge_id"] != judge_id(judge_identity(RulesJudge(), None))
    with pytest.raises(SystemExit) as exit_status:
        main(["judge-quality", str(LABELS), "--judge", "rules", "--judge-samples", "0"])
    assert exit_status.value.code == 4
    assert "must be at least 1" in capsys.readouterr().err
