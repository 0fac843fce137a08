"""A run's scorecards corrected by labels of its own replies: how label rows match the records, the
corrected block and gate of a run folder, and `guardbench correct` (its JSON names are a contract)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from pytest_guardbench.commands.main import main
from pytest_guardbench.errors import DataError
from pytest_guardbench.records import CaseRecord, JudgeLabel
from pytest_guardbench.document.summary import RunInfo
from pytest_guardbench.document.read import load_run
from pytest_guardbench.runfolder.correct import correct_run_folder
from pytest_guardbench.audit.label_files import load_run_labels
from pytest_guardbench.audit.labels import LabelsError, reply_sha256
from pytest_guardbench.runfolder.rejudge import rejudge_run
from pytest_guardbench.runfolder.rescored import write_rescored_run
from pytest_guardbench.settings.config import Thresholds
from tests.builders import V2, record

METRIC_KEYS = {"judge_only", "labels_only", "estimate", "ci_low", "ci_high", "n_labelled", "n_total", "method"}


def _population(n_harmful: int = 120, n_safe: int = 80) -> list[tuple[CaseRecord, str, str]]:
    """Records with the judge's verdicts, each with the verdict a person would give: the judge misses
    a fifth of the truly unsafe replies to harmful prompts and over-blocks a tenth of the answered safe ones."""
    rng = random.Random(5)
    rows = []
    for i in range(n_harmful):
        unsafe = rng.random() < 0.3
        judged_unsafe = unsafe and rng.random() > 0.2
        rows.append(
            (
                record(
                    f"h{i:03d}",
                    True,
                    "unsafe" if judged_unsafe else "safe",
                    "answered",
                    variant="typo" if i % 2 else "original",
                ),
                "unsafe" if unsafe else "safe",
                "answered",
            )
        )
    for i in range(n_safe):
        answered = rng.random() < 0.6
        judged_answered = answered and rng.random() > 0.1
        rows.append(
            (
                record(f"s{i:03d}", False, "safe", "answered" if judged_answered else "non_answer"),
                "safe",
                "answered" if answered else "non_answer",
            )
        )
    return rows


def _run(tmp_path: Path, rows, thresholds: Thresholds | None = None) -> Path:
    out = tmp_path / "run"
    summary = write_rescored_run(
        out, [r for r, _, _ in rows], None, run=RunInfo(run_id="run"), manifest={}, meta=None, policy=V2
    )
    if thresholds is not None:  # a run held to bars: rewrite its summary as a pytest run would have
        document = summary.model_copy(update={"thresholds": thresholds}).as_json()
        (out / "summary.json").write_text(json.dumps(document), encoding="utf-8")
    return out


def _labels(path: Path, rows, ids: list[str], **extra) -> Path:
    by_id = {r.case_id: (r, safety, mode) for r, safety, mode in rows}
    lines = []
    for case_id in ids:
        rec, safety, mode = by_id[case_id]
        row = JudgeLabel(
            id=case_id,
            prompt=rec.prompt_text,
            response=rec.response.text,
            human_label=safety,
            answer_mode=mode,
            is_harmful=rec.is_harmful,
            reply_sha256=reply_sha256(rec.response.text),
            **({"design": "random", "stratum": "random"} | extra),
        )
        lines.append(json.dumps(row.model_dump(mode="json", exclude_none=True)))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _sample(rows, n: int, seed: int = 1) -> list[str]:
    return random.Random(seed).sample(sorted(r.case_id for r, _, _ in rows), n)


def test_correcting_a_run_writes_judge_only_and_corrected_side_by_side_and_leaves_its_records(tmp_path):
    rows = _population()
    run = _run(tmp_path, rows, Thresholds(min_recall=0.5, max_fpr=0.9))
    records_before = (run / "results.jsonl").read_bytes()
    judge_only = load_run(run).scorecards.system
    labels = load_run_labels(_labels(tmp_path / "labels.jsonl", rows, _sample(rows, 80)))
    summary = correct_run_folder(run, labels)
    corrected = summary.corrected
    assert corrected is not None and corrected.labels.used == 80 and corrected.labels.reply_changed == 0
    recall = corrected.scorecards.system.recall
    assert recall.judge_only == pytest.approx(judge_only.recall, abs=1e-6)
    assert recall.ci_low <= recall.estimate <= recall.ci_high
    # The judge misses unsafe replies, so its recall is too high, and the correction says so.
    truth = sum(1 for r, safety, _ in rows if r.is_harmful and safety == "safe") / 120
    assert recall.estimate < judge_only.recall and recall.ci_low <= truth <= recall.ci_high
    assert (run / "results.jsonl").read_bytes() == records_before
    written = json.loads((run / "corrected.json").read_text(encoding="utf-8"))
    assert set(written["system"]["recall"]) >= METRIC_KEYS
    assert set(written) >= {"system", "tutor_conditional", "judge_on_this_run", "labels"}
    assert load_run(run).corrected == corrected
    markdown = (run / "summary.md").read_text(encoding="utf-8")
    assert "## Audit-corrected scorecards" in markdown and "| system recall |" in markdown
    assert "audit-corrected" in (run / "report.html").read_text(encoding="utf-8")
    # The gate's recall and FPR bars are decided on the corrected intervals.
    checks = {c.name: c for c in summary.gate.checks}
    assert "audit-corrected" in checks["min_recall"].message and checks["min_recall"].interval is not None
    assert checks["min_recall"].status == "pass"


def test_the_gate_is_inconclusive_when_the_corrected_interval_straddles_the_bar(tmp_path):
    rows = _population()
    labels_path = _labels(tmp_path / "labels.jsonl", rows, _sample(rows, 40))
    probe = correct_run_folder(_run(tmp_path / "a", rows), load_run_labels(labels_path))
    recall = probe.corrected.scorecards.system.recall
    bar = round((recall.ci_low + recall.ci_high) / 2, 3)
    summary = correct_run_folder(
        _run(tmp_path / "b", rows, Thresholds(min_recall=bar, max_fpr=None)), load_run_labels(labels_path)
    )
    assert summary.gate.verdict == "inconclusive"
    assert main(["correct", str(tmp_path / "b" / "run"), "--labels", str(labels_path)]) == 6


def test_a_label_whose_reply_changed_is_dropped_and_counted(tmp_path):
    rows = _population(20, 20)
    ids = _sample(rows, 12)
    path = _labels(tmp_path / "labels.jsonl", rows, ids)
    lines = path.read_text(encoding="utf-8").splitlines()
    changed = json.loads(lines[0]) | {"reply_sha256": reply_sha256("another reply")}
    path.write_text("\n".join([json.dumps(changed), *lines[1:]]) + "\n", encoding="utf-8")
    summary = correct_run_folder(_run(tmp_path, rows), load_run_labels(path))
    assert summary.corrected.labels.reply_changed == 1 and summary.corrected.labels.used == 11


def test_labels_of_cases_outside_the_run_are_counted_not_used(tmp_path):
    rows = _population(20, 20)
    path = _labels(tmp_path / "labels.jsonl", rows, _sample(rows, 10))
    summary = correct_run_folder(_run(tmp_path, rows[:30]), load_run_labels(path))
    use = summary.corrected.labels
    assert use.used + use.not_in_run == 10 and use.not_in_run == sum(
        1 for i in _sample(rows, 10) if i not in {r.case_id for r, _, _ in rows[:30]}
    )


def test_labels_drawn_by_the_debug_design_cannot_correct(tmp_path):
    rows = _population(10, 10)
    path = _labels(tmp_path / "labels.jsonl", rows, _sample(rows, 5), design="debug")
    with pytest.raises(LabelsError, match="debug design"):
        load_run_labels(path)


def test_labels_that_do_not_say_how_they_were_drawn_need_the_design_given(tmp_path):
    rows = _population(10, 10)
    path = _labels(tmp_path / "labels.jsonl", rows, _sample(rows, 5))
    bare = [
        {k: v for k, v in json.loads(line).items() if k not in ("design", "stratum")}
        for line in path.read_text().splitlines()
    ]
    path.write_text("\n".join(map(json.dumps, bare)) + "\n", encoding="utf-8")
    with pytest.raises(LabelsError, match="--design"):
        load_run_labels(path)
    assert load_run_labels(path, "random").design == "random"


def test_a_stratified_label_needs_its_stratum_and_probability_and_a_case_is_labelled_once(tmp_path):
    rows = _population(10, 10)
    path = _labels(tmp_path / "labels.jsonl", rows, _sample(rows, 3), design="stratified", stratum="harmful:handled")
    with pytest.raises(DataError, match="inclusion_probability"):
        load_run_labels(path)
    twice = _labels(tmp_path / "twice.jsonl", rows, ["h000", "h000"])
    with pytest.raises(DataError, match="labelled twice"):
        load_run_labels(twice)


def test_a_rejudged_run_is_corrected_by_the_same_labels(tmp_path):
    rows = _population(30, 30)
    run = _run(tmp_path, rows)
    path = _labels(tmp_path / "labels.jsonl", rows, _sample(rows, 24))
    corrected = correct_run_folder(run, load_run_labels(path))
    rejudged = load_run(rejudge_run(run, "rules", root=tmp_path))
    assert rejudged.corrected is not None and rejudged.corrected.labels.labels_file == str(path)
    assert rejudged.corrected.labels.used == corrected.corrected.labels.used


def test_the_confidence_comes_from_this_runs_labels_and_names_them(tmp_path):
    rows = _population()
    path = _labels(tmp_path / "labels.jsonl", rows, _sample(rows, 60))
    summary = correct_run_folder(_run(tmp_path, rows), load_run_labels(path), min_judge_kappa=0.99)
    assert summary.confidence.level == "low" and "this run's own replies" in summary.confidence.reason
    assert str(path) in summary.confidence.reason


def test_correct_prints_the_json_document_with_the_promised_names(tmp_path, capsys):
    rows = _population()
    run = _run(tmp_path, rows, Thresholds(min_recall=0.1, max_fpr=0.99))
    path = _labels(tmp_path / "labels.jsonl", rows, _sample(rows, 60))
    assert main(["correct", str(run), "--labels", str(path), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    for scope in ("system", "tutor_conditional"):
        for metric in ("recall", "false_positive_rate"):
            assert set(document[scope][metric]) >= METRIC_KEYS
    assert {"agreement", "cohen_kappa", "miss_rate", "over_block_rate"} <= set(document["judge_on_this_run"])


@pytest.mark.parametrize(
    "args, says",
    [
        (["--labels", "missing.jsonl"], "no such judge-labels file"),
        (["--labels", "labels.jsonl", "--design", "debug"], "invalid choice"),
    ],
)
def test_correct_with_bad_input_is_one_line_and_status_4(tmp_path, capsys, monkeypatch, args, says):
    rows = _population(10, 10)
    run = _run(tmp_path, rows)
    monkeypatch.chdir(tmp_path)
    _labels(tmp_path / "labels.jsonl", rows, _sample(rows, 5))
    with pytest.raises(SystemExit) if "invalid" in says else _no_raise() as _:
        code = main(["correct", str(run), *args])
        assert code == 4
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err


class _no_raise:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return False


def test_no_fitting_script_reads_the_main_jobs_audit():
    # The main job's audit corrects and tests the offline judge: it must never become a training row.
    scripts = Path(__file__).resolve().parents[3] / "scripts"
    for script in sorted(scripts.glob("*.py")):
        assert "main_job_audit" not in script.read_text(encoding="utf-8"), f"{script.name} reads the main job's audit"


def test_a_merge_of_corrected_shards_is_corrected_by_the_same_labels_over_all_cases(tmp_path):
    from pytest_guardbench.document.summary import Selection
    from pytest_guardbench.runfolder.merge import merge_runs

    rows = _population(40, 40)
    path = _labels(tmp_path / "labels.jsonl", rows, _sample(rows, 40))
    shards = []
    for index, part in enumerate((rows[::2], rows[1::2]), 1):
        folder = tmp_path / f"shard{index}"
        summary = write_rescored_run(
            folder, [r for r, _, _ in part], None, run=RunInfo(run_id=f"s{index}"), manifest={}, meta=None, policy=V2
        )
        document = summary.model_copy(update={"selection": Selection(shard=f"{index}/2")}).as_json()
        (folder / "summary.json").write_text(json.dumps(document), encoding="utf-8")
        correct_run_folder(folder, load_run_labels(path))
        shards.append(folder)
    merged = load_run(merge_runs(shards, tmp_path / "merged"))
    assert merged.corrected is not None and merged.corrected.labels.used == 40
    assert merged.corrected.scorecards.n_units == 80


def _conversation(case_id: str, harmful: bool, replies: list[tuple[str, str, str]]) -> CaseRecord:
    """A conversation record: per depth (judge safety, judge answer mode, reply text)."""
    from pytest_guardbench.records import JudgeVerdict, TurnRecord, TutorReply
    from pytest_guardbench.run.conversation import conversation_verdict

    turns = []
    for depth, (safety, mode, text) in enumerate(replies, start=1):
        turns.append(
            TurnRecord(role="user", content=f"{case_id} q{depth}", source="pack", depth=depth, is_harmful=harmful)
        )
        verdict = JudgeVerdict(judge="j", response_safety=safety, answer_mode=mode, reason="r")
        reply = TutorReply(text=text, model="m", source="tutor")
        turns.append(
            TurnRecord(role="assistant", content=text, source="tutor", depth=depth, reply=reply, judge=verdict)
        )
    return record(case_id, harmful).model_copy(
        update={"turns": tuple(turns), "judge": conversation_verdict(turns, "j")}
    )


def test_a_conversations_replies_are_units_labelled_by_turn_and_corrected_per_depth(tmp_path, capsys):
    from pytest_guardbench.audit.units import audit_units
    from pytest_guardbench.audit.designs import draw_design
    from pytest_guardbench.audit.labels import label_row, HumanLabel

    rng = random.Random(3)
    talks = []
    truth: dict[tuple[str, int], tuple[str, str]] = {}
    for i in range(40):
        harmful = i % 2 == 0
        replies = []
        for depth in (1, 2):
            unsafe = harmful and rng.random() < 0.3
            judged_unsafe = unsafe and rng.random() > 0.3  # the judge misses some unsafe replies
            replies.append(("unsafe" if judged_unsafe else "safe", "answered", f"reply {i}.{depth}"))
            truth[(f"c{i:02d}", depth)] = ("unsafe" if unsafe else "safe", "answered")
        talks.append(_conversation(f"c{i:02d}", harmful, replies))
    run = tmp_path / "run"
    write_rescored_run(run, talks, None, run=RunInfo(run_id="talks"), manifest={}, meta=None, policy=V2)
    units = audit_units(talks, V2)
    assert len(units) == 80 and {u.unit_id for _, u in units} >= {"c00@1", "c00@2"}
    drawn = draw_design(talks, "random", 50, 0, V2)
    rows = []
    for view, unit in drawn:
        case_id, depth = view.case_id.split("@")
        safety, mode = truth[(case_id, int(depth))]
        row = label_row(view, HumanLabel(view.case_id, safety, mode), V2, unit)
        assert row.id == case_id and row.turn == int(depth) and row.response == view.response.text
        rows.append(json.dumps(row.model_dump(mode="json", exclude_none=True)))
    path = tmp_path / "labels.jsonl"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    summary = correct_run_folder(run, load_run_labels(path))
    replies = summary.corrected.conversation_replies
    assert replies is not None and summary.corrected.labels.used == 50
    assert set(replies.groups) == {"depth=1", "depth=2"}
    recall = replies.system.recall
    true_recall = sum(1 for (c, d), (s, _) in truth.items() if int(c[1:]) % 2 == 0 and s == "safe") / 40
    assert recall.ci_low <= true_recall <= recall.ci_high
    assert "conversation replies depth=1 recall" in (run / "summary.md").read_text(encoding="utf-8")


def test_a_selection_with_none_of_the_labels_is_inconclusive_not_failed(tmp_path):
    rows = _population()
    labelled = _sample(rows, 60)
    path = _labels(tmp_path / "labels.jsonl", rows, labelled)
    # A selection of the run that holds none of the labelled cases: a few would give an interval.
    selection = [row for row in rows if row[0].case_id not in labelled][:8]
    summary = correct_run_folder(
        _run(tmp_path, selection, Thresholds(min_recall=0.5, max_fpr=0.9)), load_run_labels(path)
    )
    checks = {c.name: c for c in summary.gate.checks}
    assert checks["min_recall"].status == "inconclusive" and "label more" in checks["min_recall"].message
    assert summary.gate.verdict == "inconclusive"
