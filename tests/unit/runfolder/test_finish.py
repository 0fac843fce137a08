"""The one finish of a run folder (`RunFinish`), on its own: records stream in and are written in
batches (a record written ahead of its report is written once, and taken back out when its test never
reports), the summary is built from what was counted, a case given twice counts once (its last record),
what the run did not measure fails the gate, labels correct the gate's decision, and `write` writes the
folder."""

from __future__ import annotations

import hashlib
import json

import pytest

from pytest_guardbench.audit.label_files import load_run_labels
from pytest_guardbench.document.read import load_run
from pytest_guardbench.document.summary import RunInfo, StackInfo
from pytest_guardbench.runfolder.finish import RunFacts, RunFinish
from pytest_guardbench.runfolder.folder import ReportWriteError
from pytest_guardbench.scoring.policies import policy_named
from pytest_guardbench.scoring.scorecard import score_record
from pytest_guardbench.settings.config import Thresholds
from tests.builders import case, record, run_meta

V2 = policy_named("assistant_policy_v2")
STACK = StackInfo(guardrail="none", tutor="t", judge="rules", malformed_policy="block", policy=V2.name)


def _facts(**fields):
    return RunFacts(run=RunInfo(run_id="r"), stack=STACK, **fields)


def _finish(tmp_path, **kwargs):
    return RunFinish(tmp_path, V2, Thresholds(min_recall=0.5, max_fpr=0.5), **kwargs)


def test_records_are_written_in_one_batch_when_flushed_and_counted_by_the_score_they_carry(tmp_path):
    finish = _finish(tmp_path)
    harmful = record("a.original", True, "safe", "refused_or_blocked")
    finish.add(harmful, score_record(harmful, V2))
    # A record handed over without its score is scored under the finish's policy.
    finish.add(record("b.original", False, "safe", "non_answer"))
    assert not (tmp_path / "results.jsonl").exists()  # taken into the batch, no write yet
    finish.flush()
    lines = (tmp_path / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["case_id"] for line in lines] == ["a.original", "b.original"]
    assert finish.received == {"a.original", "b.original"}
    card = finish.summary(_facts()).scorecards.system
    assert (card.tp, card.fn, card.fp, card.tn) == (1, 0, 1, 0)


def test_records_written_ahead_are_written_once_and_those_never_reported_are_taken_back(tmp_path):
    finish = _finish(tmp_path)
    a, b, c, d = (record(f"{name}.original", True, "safe", "refused_or_blocked") for name in "abcd")
    finish.add(a)
    finish.write_ahead([b, c, d])  # finished before their tests reported
    finish.flush()
    assert len((tmp_path / "results.jsonl").read_text(encoding="utf-8").splitlines()) == 4
    finish.add(b)  # b's test reports: counted, not written again
    finish.write_ahead([c, d])  # asked again at the next report: still written once
    finish.flush()
    assert len((tmp_path / "results.jsonl").read_text(encoding="utf-8").splitlines()) == 4
    # The run stops before c and d report: their lines leave the file, which then says what the summary counts.
    summary = finish.summary(_facts())
    lines = (tmp_path / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["case_id"] for line in lines] == ["a.original", "b.original"]
    assert summary.scorecards.system.n == 2


def test_a_record_written_ahead_whose_test_failed_first_leaves_the_middle_of_the_file(tmp_path):
    finish = _finish(tmp_path)
    a, b, c = (record(f"{name}.original", True, "safe", "refused_or_blocked") for name in "abc")
    finish.add(a)
    finish.write_ahead([b, c])
    finish.flush()
    finish.add(c)  # b's test failed before it asked for its record; c's reported
    finish.close_records()
    lines = (tmp_path / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["case_id"] for line in lines] == ["a.original", "c.original"]
    assert not list(tmp_path.glob("*.tmp"))


def test_a_case_given_twice_counts_once_by_its_last_record(tmp_path):
    finish = _finish(tmp_path)
    finish.add(record("a.original", True, "unsafe", "answered"))  # mishandled first
    finish.add(record("a.original", True, "safe", "refused_or_blocked"))  # the rerun handled it
    summary = finish.summary(_facts())
    card = summary.scorecards.system
    assert (card.n, card.tp, card.fn) == (1, 1, 0)
    # Both lines are kept in results.jsonl; the reader takes the last one, as the finish did.
    assert len((tmp_path / "results.jsonl").read_text(encoding="utf-8").splitlines()) == 2


def test_what_the_run_did_not_measure_makes_it_incomplete_and_fails_the_gate(tmp_path):
    finish = _finish(tmp_path)
    finish.add(record("a.original", True, "safe", "refused_or_blocked"))
    summary = finish.summary(_facts(missing=[case("b.original", True)], incomplete_reasons=["worker crash: gw1"]))
    assert not summary.completeness.complete
    assert summary.completeness.reasons == ["worker crash: gw1", "1 selected case(s) never reported"]
    assert summary.coverage.missing_case_ids == ["b.original"]
    failed = [check.name for check in summary.gate.failures]
    assert "complete" in failed and summary.gate.verdict == "failed"


def test_a_complete_run_within_its_bars_passes(tmp_path):
    finish = _finish(tmp_path)
    finish.add(record("a.original", True, "safe", "refused_or_blocked"))
    finish.add(record("b.original", False, "safe", "answered"))
    summary = finish.summary(_facts())
    assert summary.completeness.complete and summary.gate.verdict == "passed"


def _labels_file(tmp_path, rows):
    path = tmp_path / "labels.jsonl"
    lines = []
    for case_id, safety, mode, reply in rows:
        lines.append(
            json.dumps(
                {
                    "id": case_id,
                    "prompt": "q",
                    "response": reply,
                    "human_label": safety,
                    "answer_mode": mode,
                    "design": "random",
                    "stratum": "random",
                    "inclusion_probability": 1.0,
                    "reply_sha256": hashlib.sha256(reply.encode()).hexdigest(),
                }
            )
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return load_run_labels(path)


def test_labels_of_the_run_correct_the_scorecards_and_the_gate_decides_on_them(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    # The judge calls every safe reply answered; the labels say none of them answered.
    safe = [f"s{n}.original" for n in range(12)]
    # Each reply its own: one reply to every prompt would be a non-answer by the run-level check alone.
    labels = _labels_file(tmp_path, [(case_id, "safe", "non_answer", f"reply to {case_id}") for case_id in safe])
    finish = _finish(run_dir, labels=labels)
    for case_id in safe:
        finish.add(record(case_id, False, "safe", "answered", reply=f"reply to {case_id}"))
    summary = finish.summary(_facts())
    assert summary.scorecards.system.false_positive_rate == 0.0  # the judge alone
    assert summary.corrected is not None and summary.corrected.labels.used == 12
    corrected = summary.corrected.scorecards.system.false_positive_rate
    assert corrected.estimate == 1.0 and corrected.ci_low is not None and corrected.ci_low > 0.5
    fpr = next(check for check in summary.gate.checks if check.name == "max_fpr")
    assert fpr.status == "fail"


def test_write_writes_the_folder_and_reads_back_as_written(tmp_path):
    finish = _finish(tmp_path)
    finish.add(record("a.original", True, "safe", "refused_or_blocked"))
    summary = finish.summary(_facts())
    finish.write(summary, manifest={"cases": 1}, meta=run_meta(run_id="r"))
    for name in ("summary.json", "summary.md", "variant_metrics.csv", "data_manifest.json", "meta.json", "report.html"):
        assert (tmp_path / name).is_file(), name
    assert not (tmp_path / "corrected.json").exists()
    assert load_run(tmp_path) == summary


def test_a_folder_removed_under_the_run_stops_the_next_record_and_names_the_file(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    finish = _finish(run_dir)
    finish.add(record("a.original", True))
    finish.flush()
    (run_dir / "results.jsonl").unlink()
    finish.add(record("b.original", True))
    with pytest.raises(ReportWriteError, match="results.jsonl: removed while the run was writing it"):
        finish.flush()
    assert finish.received == {"a.original", "b.original"}  # counted all the same
