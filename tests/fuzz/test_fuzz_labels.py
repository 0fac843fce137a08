"""Judge-labels files as people write them (by hand, by `guardbench audit`, cut short or edited),
through every command that reads one: `judge-quality`, `label-agreement`, `correct --labels` (one file or
several: a first labelling, a second labeller's share, settled rows), the resume of `audit --out`, and
`audit --overlap` and `--adjudicate`. A result, or exit 4 naming the file; never a crash, a traceback or the
planted key (a label's prompt or response may quote it) on the terminal."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from pytest_guardbench.commands import audit
from pytest_guardbench.commands.main import main
from tests.fuzz.conftest import check_outcome, files_under, fuzz
from tests.fuzz.runs import copy_run, write_run
from tests.fuzz.strategies import judge_label_rows, jsonl_bytes, labelled_rows

pytestmark = pytest.mark.usefixtures("planted_key")
DAMAGE = st.sampled_from(["none", "none", "none", "cut", "latin1", "garbage-line"])


@pytest.fixture(scope="module")
def base_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_run(tmp_path_factory.mktemp("labels") / "base")


def _labels(folder: str, rows: list, damage: str, name: str = "labels.jsonl") -> Path:
    path = Path(folder) / name
    path.write_bytes(jsonl_bytes(rows, damage))
    return path


@fuzz(examples=60)
@given(judge_label_rows(), DAMAGE, st.booleans())
def test_judge_quality_scores_the_rows_or_names_the_file(capsys, rows, damage, as_json):
    with tempfile.TemporaryDirectory() as folder:
        path = _labels(folder, rows, damage)
        code = main(["judge-quality", str(path), "--judge", "rules", *(["--json"] if as_json else [])])
        captured = capsys.readouterr()
        event(f"exit {code}")
        check_outcome(code, captured.out, captured.err, names=[str(path)])


@fuzz(examples=40)
@given(judge_label_rows(), judge_label_rows(), DAMAGE)
def test_label_agreement_compares_or_names_a_file(capsys, first, second, damage):
    with tempfile.TemporaryDirectory() as folder:
        a, b = _labels(folder, first, damage, "a.jsonl"), _labels(folder, second, "none", "b.jsonl")
        code = main(["label-agreement", str(a), str(b)])
        captured = capsys.readouterr()
        event(f"exit {code}")
        check_outcome(code, captured.out, captured.err, names=[str(a), str(b)])


@fuzz(examples=40)
@given(judge_label_rows(), DAMAGE, st.sampled_from([[], ["--design", "random"], ["--design", "stratified"]]))
def test_correct_corrects_the_run_or_names_the_labels(capsys, base_run, rows, damage, design):
    with tempfile.TemporaryDirectory() as folder:
        run = copy_run(base_run, Path(folder))
        path = _labels(folder, rows, damage)
        code = main(["correct", str(run), "--labels", str(path), *design])
        captured = capsys.readouterr()
        event(f"exit {code}")
        check_outcome(code, captured.out, captured.err, names=[str(path), str(run)], files=files_under(run))


@fuzz(examples=40)
# Not "latin1": audit/labels.py's read_labels reads with read_text(), so a labels file that is not UTF-8
# says "'utf-8' codec can't decode" without naming the file (reported; see the xfail below).
@given(judge_label_rows(), st.sampled_from(["none", "none", "cut", "garbage-line"]))
def test_an_audit_resumes_its_labels_or_names_the_file(capsys, monkeypatch, base_run, rows, damage):
    shown = []
    monkeypatch.setattr(audit, "run_audit", lambda labelling, *a, **k: shown.append(len(labelling.sample)))
    with tempfile.TemporaryDirectory() as folder:
        path = _labels(folder, rows, damage)
        code = main(["audit", str(base_run), "--out", str(path), "--sample", "3", "--labeller", "ana"])
        captured = capsys.readouterr()
        event(f"exit {code}")
        check_outcome(code, captured.out, captured.err, names=[str(path)])
        assert (code == 0) == bool(shown), "the labelling screen opens only on a readable labels file"


def test_an_audit_labels_file_that_is_not_utf8_is_named(capsys, monkeypatch, base_run, tmp_path):
    monkeypatch.setattr(audit, "run_audit", lambda *a, **k: None)
    path = tmp_path / "labels.jsonl"
    path.write_bytes(b"\xe9\n")
    assert main(["audit", str(base_run), "--out", str(path), "--labeller", "ana"]) == 4
    assert str(path) in capsys.readouterr().err


@fuzz(examples=40)
@given(st.lists(labelled_rows(), min_size=1, max_size=3), DAMAGE, st.sampled_from([[], ["--design", "random"]]))
def test_correct_takes_several_labels_files_or_names_one(capsys, base_run, files, damage, design):
    with tempfile.TemporaryDirectory() as folder:
        run = copy_run(base_run, Path(folder))
        paths = [_labels(folder, rows, damage if i == 0 else "none", f"l{i}.jsonl") for i, rows in enumerate(files)]
        code = main(["correct", str(run), *(f"--labels={p}" for p in paths), *design])
        captured = capsys.readouterr()
        event(f"exit {code}")
        check_outcome(code, captured.out, captured.err, names=[*map(str, paths), str(run)], files=files_under(run))


@fuzz(examples=30)
@given(labelled_rows(), labelled_rows(), DAMAGE)
def test_adjudicate_pairs_two_labellings_or_names_a_file(capsys, monkeypatch, base_run, first, second, damage):
    settled = []
    monkeypatch.setattr(audit, "run_adjudication", lambda adjudication, *a, **k: settled.append(adjudication))
    with tempfile.TemporaryDirectory() as folder:
        a, b = _labels(folder, first, damage, "a.jsonl"), _labels(folder, second, "none", "b.jsonl")
        code = main(["audit", str(base_run), "--adjudicate", str(a), str(b), "--labeller", "cy"])
        captured = capsys.readouterr()
        event(f"exit {code}")
        check_outcome(code, captured.out, captured.err, names=[str(a), str(b), str(base_run)])
        if code == 0:
            assert settled and all(p.first.response == p.second.response for p in settled[0].pairs)


@fuzz(examples=30)
@given(labelled_rows(), DAMAGE, st.sampled_from(["0.5", "1", "0.01"]))
def test_an_overlap_of_a_first_labelling_opens_its_share_or_names_the_file(
    capsys, monkeypatch, base_run, rows, damage, share
):
    shown = []
    monkeypatch.setattr(audit, "run_audit", lambda labelling, *a, **k: shown.append(labelling))
    with tempfile.TemporaryDirectory() as folder:
        first = _labels(folder, rows, damage, "first.jsonl")
        code = main(["audit", str(base_run), "--overlap", share, "--of", str(first), "--labeller", "zed"])
        captured = capsys.readouterr()
        event(f"exit {code}")
        check_outcome(code, captured.out, captured.err, names=[str(first), str(base_run), "--labeller"])
        if code == 0:
            assert shown and shown[0].blind, "a second labeller never sees the judge"
