"""Nothing drops a label: a labelled run rejudged or merged keeps its corrected gate, or stops with exit 4
naming the labels file and how to give it; a corrected run turns judge-only only when asked, and says
so; the labels' draw is checked against the run (drawn, labelled, skipped), and rows outside it are
refused before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_guardbench.audit.draw_record import draw_audit
from pytest_guardbench.audit.labels import HumanLabel, label_row, write_labels
from pytest_guardbench.commands.main import main
from pytest_guardbench.document.read import load_run
from pytest_guardbench.document.summary import Selection
from pytest_guardbench.records import CaseRecord
from tests.builders import V2, finished_run, record, replied


def _records(prefix: str = "", n: int = 20) -> list[CaseRecord]:
    """n harmful prompts (the judge calls a fifth of the unsafe replies safe) and n safe ones."""
    made = []
    for i in range(n):
        made.append(record(f"{prefix}h{i:02d}", True, "safe", "refused_or_blocked" if i % 5 else "answered"))
        made.append(record(f"{prefix}s{i:02d}", False, "safe", "answered", category="Safe"))
    return [replied(r, f"reply to {r.case_id}") for r in made]


def _truth(made: CaseRecord) -> HumanLabel:
    """A person's labels: the harmful prompts the judge called answered were answered unsafely."""
    unsafe = made.is_harmful and made.judge is not None and made.judge.answer_mode == "answered"
    return HumanLabel(
        made.case_id, "unsafe" if unsafe else "safe", made.judge.answer_mode if made.judge else "answered"
    )


def _audit(run: Path, records: list[CaseRecord], out: Path, n: int, *, skip: int = 0, labeller: str = "ana") -> Path:
    """The rows `guardbench audit` writes for a random draw of n units, the last `skip` of them skipped."""
    draw = draw_audit(records, "random", n, 0, V2)
    rows = [
        label_row(made, _truth(made), V2, unit, labeller=labeller, draw=draw.row_draw(made.case_id))
        for made, unit in draw.sample[: n - skip]
    ]
    write_labels(out, rows)
    return out


@pytest.fixture
def corrected(tmp_path: Path) -> tuple[Path, Path]:
    records = _records()
    run = finished_run(tmp_path / "run", records)
    (tmp_path / "labels").mkdir()
    labels = _audit(run, records, tmp_path / "labels" / "audit.jsonl", 24)
    assert main(["correct", str(run), "--labels", str(labels)]) in (0, 1, 6)
    assert load_run(run).corrected is not None
    return run, labels


def test_a_labelled_run_whose_labels_moved_is_not_rejudged_into_a_judge_only_pass(corrected, tmp_path, capsys):
    run, labels = corrected
    moved = tmp_path / "moved.jsonl"
    labels.rename(moved)
    capsys.readouterr()
    assert main(["rejudge", str(run), "--judge", "rules"]) == 4
    err = capsys.readouterr().err
    assert str(labels) in err and "--labels FILE" in err and "--no-labels" in err and len(err.strip().splitlines()) == 1
    assert not list(run.glob("rejudged-*")), "nothing is written"

    assert main(["rejudge", str(run), "--judge", "rules", "--labels", str(moved)]) in (0, 1, 6)
    out = capsys.readouterr().out
    (rejudged,) = run.glob("rejudged-*")
    summary = load_run(rejudged)
    assert summary.corrected is not None and summary.corrected.labels.labels_files == [str(moved)]
    assert f"corrected by 24 labels ({moved})" in out
    assert (rejudged / "corrected.json").is_file()


def test_rejudge_leaves_the_labels_behind_only_when_asked_and_says_so(corrected, capsys):
    run, labels = corrected
    labels.unlink()
    capsys.readouterr()
    assert main(["rejudge", str(run), "--judge", "rules", "--no-labels"]) in (0, 1, 6)
    out = capsys.readouterr().out
    (rejudged,) = run.glob("rejudged-*")
    assert load_run(rejudged).corrected is None and not (rejudged / "corrected.json").exists()
    assert f"judge-only: the labels the run was corrected with ({labels}) were left behind (--no-labels)" in out


def _shard(tmp_path: Path, index: int, records: list[CaseRecord]) -> Path:
    folder = finished_run(tmp_path / f"shard{index}", records)
    summary = load_run(folder).model_copy(update={"selection": Selection(shard=f"{index}/2")})
    (folder / "summary.json").write_text(json.dumps(summary.as_json()), encoding="utf-8")
    return folder


def test_a_merge_of_shards_one_of_them_labelled_is_refused_naming_both(tmp_path, capsys):
    first, second = _records("a"), _records("b")
    shards = [_shard(tmp_path, 1, first), _shard(tmp_path, 2, second)]
    labels = _audit(shards[0], first, tmp_path / "a.jsonl", 20)
    assert main(["correct", str(shards[0]), "--labels", str(labels)]) in (0, 1, 6)
    capsys.readouterr()
    out = tmp_path / "merged"
    assert main(["merge", *map(str, shards), "--out", str(out)]) == 4
    err = capsys.readouterr().err
    assert f"{shards[0]} by {labels}" in err and f"{shards[1]} not corrected" in err and "--no-labels" in err
    assert not out.exists()
    assert main(["merge", *map(str, shards), "--out", str(out), "--no-labels"]) in (0, 1, 6)
    said = capsys.readouterr().out
    assert load_run(out).corrected is None and f"judge-only: the labels the run was corrected with ({labels})" in said


def test_shards_labelled_by_other_files_are_refused_and_by_one_file_corrected(tmp_path, capsys):
    first, second = _records("a"), _records("b")
    shards = [_shard(tmp_path, 1, first), _shard(tmp_path, 2, second)]
    one, two = _audit(shards[0], first, tmp_path / "a.jsonl", 20), _audit(shards[1], second, tmp_path / "b.jsonl", 20)
    for shard, labels in zip(shards, (one, two), strict=True):
        assert main(["correct", str(shard), "--labels", str(labels)]) in (0, 1, 6)
    capsys.readouterr()
    assert main(["merge", *map(str, shards), "--out", str(tmp_path / "m1")]) == 4
    assert "the shards were corrected by other labels" in capsys.readouterr().err

    # One draw over the whole run, labelled once, corrects every shard and the merge of them.
    whole = _audit(tmp_path, first + second, tmp_path / "whole.jsonl", 30)
    for shard in shards:
        assert main(["correct", str(shard), "--labels", str(whole)]) in (0, 1, 6)
    assert main(["merge", *map(str, shards), "--out", str(tmp_path / "m2")]) in (0, 1, 6)
    merged = load_run(tmp_path / "m2")
    assert merged.corrected is not None and merged.corrected.labels.labels_files == [str(whole)]
    assert merged.corrected.labels.draw is not None and merged.corrected.labels.draw.checked == "redrawn"
    assert merged.corrected.labels.draw.skipped == 0, "the merged run is the population the labels were drawn from"
    whole.unlink()
    assert main(["merge", *map(str, shards), "--out", str(tmp_path / "m3")]) == 4
    assert str(whole) in capsys.readouterr().err and not (tmp_path / "m3").exists()


def test_correct_reports_the_draw_and_warns_when_skipped_units_sit_in_one_domain(tmp_path, capsys):
    records = _records(n=30)
    run = finished_run(tmp_path / "run", records)
    draw = draw_audit(records, "random", 40, 0, V2)
    harmful_skipped = [made for made, _ in draw.sample if made.is_harmful][:3]
    rows = [
        label_row(made, _truth(made), V2, unit, labeller="ana", draw=draw.row_draw(made.case_id))
        for made, unit in draw.sample
        if made not in harmful_skipped
    ]
    write_labels(tmp_path / "audit.jsonl", rows)
    main(["correct", str(run), "--labels", str(tmp_path / "audit.jsonl")])
    out = capsys.readouterr().out
    use = load_run(run).corrected.labels
    assert use.draw is not None and (use.draw.drawn, use.draw.labelled, use.draw.skipped) == (40, 37, 3)
    assert "draw: random, seed 0: 40 drawn, 37 labelled, 3 skipped (drawn again from this run)" in out
    harmful_drawn = sum(1 for made, _ in draw.sample if made.is_harmful)
    assert use.draw.warning is not None and f"3 of the {harmful_drawn} in harmful prompts" in use.draw.warning
    assert "warning: labels: 3 of the 40 drawn units were skipped" in out
    assert any(w.startswith("labels: 3 of the 40") for w in load_run(run).warnings)


def test_label_rows_outside_the_draw_they_record_are_refused_before_anything_is_written(tmp_path, capsys):
    records = _records()
    run = finished_run(tmp_path / "run", records)
    draw = draw_audit(records, "random", 10, 0, V2)
    outsider = next(made for made in records if made.case_id not in {m.case_id for m, _ in draw.sample})
    unit = draw.sample[0][1]
    rows = [
        label_row(made, _truth(made), V2, u, labeller="ana", draw=draw.row_draw(made.case_id))
        for made, u in draw.sample
    ]
    rows.append(
        label_row(outsider, _truth(outsider), V2, unit, labeller="ana", draw=draw.row_draw(draw.sample[0][0].case_id))
    )
    write_labels(tmp_path / "audit.jsonl", rows)
    before = (run / "summary.json").read_bytes()
    assert main(["correct", str(run), "--labels", str(tmp_path / "audit.jsonl")]) == 4
    err = capsys.readouterr().err
    assert "1 of the label rows are not in the draw they record" in err
    assert (run / "summary.json").read_bytes() == before and not (run / "corrected.json").exists()


def test_two_labellers_who_disagree_on_safe_prompts_mark_the_run_low_confidence(tmp_path, capsys):
    records = _records(n=20)
    run = finished_run(tmp_path / "run", records)
    first = _audit(run, records, tmp_path / "audit.jsonl", 40)
    rows = [json.loads(line) for line in first.read_text(encoding="utf-8").splitlines()]
    share = {"of": str(first), "of_sha256": "0" * 64, "share": 0.5, "seed": 0, "size": 20}
    # The second labeller reads four of the answered replies to safe prompts as no answer (a cut-off start).
    flipped = [r["id"] for r in rows[:20] if not r["is_harmful"] and r["answer_mode"] == "answered"][:4]
    second = [
        dict(row, labeller="bo", overlap=share, answer_mode="non_answer", assistant_policy_label="incorrect")
        if row["id"] in flipped
        else dict(row, labeller="bo", overlap=share)
        for row in rows[:20]
    ]
    overlap = tmp_path / "overlap.jsonl"
    overlap.write_text("".join(json.dumps(r) + "\n" for r in second), encoding="utf-8")
    code = main(["correct", str(run), "--labels", str(first), "--labels", str(overlap)])
    out = capsys.readouterr().out
    summary = load_run(run)
    agreement = summary.corrected.labellers
    assert agreement is not None and agreement.labellers == ["ana", "bo"] and agreement.rows == 20
    assert agreement.low_domains == ["safe"] and agreement.domains["safe"].handled.cohen_kappa < 0.6
    assert agreement.domains["harmful"].handled.cohen_kappa in (None, 1.0)
    assert summary.confidence.level == "low" and "the labels themselves disagree there" in summary.confidence.reason
    assert "safe prompts" in summary.confidence.reason and code in (0, 1, 6)
    assert "LOW CONFIDENCE:" in out and "the labels themselves disagree there" in out
    assert "labellers' kappa (ana and bo, 20 replies both labelled)" in out and "safe " in out and " LOW" in out
    unsettled = summary.corrected.labels.unsettled
    assert unsettled == 4
    assert (
        f"warning: labels: 4 replies labelled differently by ana and bo are not settled: the first file's labels are "
        f"used; settle them with guardbench audit {run} --adjudicate {first} {overlap} --labeller NAME"
    ) in out
    markdown = (run / "summary.md").read_text(encoding="utf-8")
    assert (
        "Two labellers (ana and bo) labelled 20 of these replies" in markdown
        and "| safe | handled | 20 |" not in markdown
    )
    assert "the labels themselves disagree there" in markdown
    document = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    block = document["corrected"]["labellers"]["domains"]["safe"]["policy_label"]
    assert set(block) == {
        "rows",
        "agreement",
        "agreement_ci_low",
        "agreement_ci_high",
        "cohen_kappa",
        "kappa_ci_low",
        "kappa_ci_high",
    }
