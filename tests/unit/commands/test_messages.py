"""Messages that name what the user gave: compare over runs whose ids match but whose prompts do not,
audit --out in a folder that does not exist, a folder given where a labels file goes, a response
cache that cannot be opened. Each is one line, exit 4 where the input is at fault."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_guardbench.commands.main import main
from pytest_guardbench.errors import GuardbenchError
from pytest_guardbench.exit_status import ExitStatus
from pytest_guardbench.providers.cache import CacheUnusable, ResponseCache
from tests.fuzz.runs import _records, label_row, write_run


def _reworded_run(folder: Path, changed: set[int]) -> Path:
    """The same cases as `write_run`'s, the prompts of `changed` rewritten (ids kept)."""
    records = [
        r.model_copy(update={"prompt_text": f"{r.prompt_text}, reworded"}) if n in changed else r
        for n, r in enumerate(_records())
    ]
    return write_run(folder, records)


def test_compare_refuses_runs_whose_ids_match_but_whose_prompts_differ(tmp_path, capsys):
    first = write_run(tmp_path / "a")
    second = _reworded_run(tmp_path / "b", {3, 7})
    assert main(["compare", str(first), str(second), "--name", "a", "--name", "b"]) == 4
    err = capsys.readouterr().err.strip()
    assert "2 case(s) have the same id but another prompt text in another run (e.g. p.i3.original)" in err
    assert "pass --allow-different-cases" in err and len(err.splitlines()) == 1


def test_compare_allowing_different_cases_says_how_many_prompts_differ_and_leaves_them_out(tmp_path, capsys):
    first = write_run(tmp_path / "a")
    second = _reworded_run(tmp_path / "b", {3, 7})
    argv = ["compare", str(first), str(second), "--name", "a", "--name", "b", "--allow-different-cases"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    [warning] = [line for line in captured.err.splitlines() if "warning" in line]
    assert "2 case(s) have the same id but another prompt text" in warning and "p.i3.original" in warning
    assert "compared on the 10 shared cases only" in warning


def test_compare_of_the_same_cases_says_nothing(tmp_path, capsys):
    assert main(["compare", str(write_run(tmp_path / "a")), str(write_run(tmp_path / "b"))]) == 0
    assert "warning" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("out", "said"),
    [
        ("nope/a.jsonl", "--out nope/a.jsonl: no such folder nope"),
        (".", "--out .: is a folder; name a labels file in it"),
    ],
)
def test_audit_out_names_the_option_and_the_folder_before_any_screen(tmp_path, capsys, monkeypatch, out, said):
    run = write_run(tmp_path / "run")
    monkeypatch.chdir(tmp_path)
    assert main(["audit", str(run), "--labeller", "ana", "--out", out]) == 4
    captured = capsys.readouterr()
    assert captured.err.strip() == f"guardbench audit: {said}" and ".tmp" not in captured.err
    assert captured.out == "", "no screen was drawn"


def test_a_folder_given_for_a_labels_file_is_called_a_folder(tmp_path, capsys):
    run = write_run(tmp_path / "run")
    assert main(["judge-quality", str(tmp_path), "--judge", "rules"]) == 4
    assert capsys.readouterr().err.strip() == (
        f"guardbench judge-quality: {tmp_path}: is a folder, not a judge-labels file; name the JSONL file in it"
    )
    assert main(["correct", str(run), "--labels", str(tmp_path)]) == 4
    assert "is a folder, not a judge-labels file" in capsys.readouterr().err
    assert main(["audit", str(run), "--overlap", "0.5", "--of", str(tmp_path), "--labeller", "b"]) == 4
    assert f"{tmp_path}: is a folder, not a labels file" in capsys.readouterr().err


@pytest.mark.parametrize("shape", ["folder", "file-as-folder"])
def test_a_response_cache_that_cannot_be_opened_names_its_path_and_option(tmp_path, shape):
    if shape == "folder":
        path = tmp_path / "cache.sqlite"
        path.mkdir()
        said = "is a folder, not a response cache file"
    else:
        (tmp_path / "afile").write_text("x", encoding="utf-8")
        path = tmp_path / "afile" / "cache.sqlite"
        said = f"{tmp_path / 'afile'} is a file, not a folder"
    with pytest.raises(CacheUnusable) as raised:
        ResponseCache(path)
    assert str(raised.value).startswith(f"--guardbench-cache-path {path}: {said}")
    assert "unable to open database file" not in str(raised.value)
    assert isinstance(raised.value, GuardbenchError) and raised.value.exit_status == ExitStatus.USAGE_ERROR


def test_screen_names_its_own_cache_option(tmp_path, capsys):
    folder = tmp_path / "cache.sqlite"
    folder.mkdir()
    argv = ["screen", "child_safety_v1", "--guardrail", "keyword", "--cache", "write", "--cache-path", str(folder)]
    assert main(argv) == 4
    assert capsys.readouterr().err.strip() == (
        f"guardbench screen: --cache-path {folder}: is a folder, not a response cache file; name a file in it"
    )


def test_a_pytest_run_with_label_rows_that_name_no_design_never_says_give_design():
    """The plugin's message names its own setting (the fix is in plugin/run_setup.py's LABELS_DESIGN)."""
    from pytest_guardbench.plugin.run_setup import LABELS_DESIGN

    assert "--design" not in LABELS_DESIGN and "guardbench_labels" in LABELS_DESIGN
    assert json.dumps(LABELS_DESIGN)  # one line of text


KEY = "planted-team-key-5Rw8Tq2Zx"


def test_a_key_given_where_a_labels_file_goes_is_not_echoed(tmp_path, capsys, monkeypatch):
    """`correct RUN --labels "$OPENAI_API_KEY"`: the message says there is no such file, without the key."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    run = write_run(tmp_path / "run")
    assert main(["correct", str(run), "--labels", KEY]) == 4
    captured = capsys.readouterr()
    assert "[REDACTED]: no such judge-labels file" in captured.err
    assert KEY not in captured.out + captured.err


def test_a_key_shaped_id_labelled_twice_is_not_printed_whole(tmp_path, capsys):
    run = write_run(tmp_path / "run")
    row = label_row(id="p.sk-live-Qw3rTy8uI0pAs2DfGh")
    labels = tmp_path / "labels.jsonl"
    labels.write_text((json.dumps(row) + "\n") * 2, encoding="utf-8")
    assert main(["correct", str(run), "--labels", str(labels)]) == 4
    err = capsys.readouterr().err
    assert "labelled twice" in err and "sk-live-Qw3rTy8uI0pAs2DfGh" not in err
