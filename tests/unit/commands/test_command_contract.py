"""The one contract of every `guardbench` command: a documented status and one line on stderr, a bug
said as one line (exit 3) and never a traceback, a missing extra named with its pip line (exit 4), and
no key in what it prints."""

from __future__ import annotations

import errno
import json
import sys
from pathlib import Path

import pytest

from pytest_guardbench.commands import expand
from pytest_guardbench.commands.main import main
from pytest_guardbench.errors import DataError, InternalError, RunFolderError, UsageError
from pytest_guardbench.providers.base import ProviderError

KEY = "sk-contract-Qw8Er7Ty6Ui5Op4As3"
PACK = '{"name": "p", "items": [{"id": "a", "prompt_text": "how do plants grow", "metadata": {"is_harmful": false}}]}'


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    path = tmp_path / "pack.json"
    path.write_text(PACK, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("raised", "status", "said"),
    [
        (ValueError("boom\nand a second line"), 3, "internal error (a bug: please report it): ValueError: boom"),
        (KeyError("missing"), 3, "internal error (a bug: please report it): KeyError: 'missing'"),
        (
            InternalError("a promise broken"),
            3,
            "internal error (a bug: please report it): InternalError: a promise broken",
        ),
        (UsageError("--variants nosuch: unknown"), 4, "--variants nosuch: unknown"),
        (DataError("not a pack", path="p.json", line=3), 4, "p.json:3: not a pack"),
        (RunFolderError("reports/x: in use by pid 7"), 4, "reports/x: in use by pid 7"),
        (ProviderError("tutor: HTTP 500"), 1, "tutor: HTTP 500"),
        (OSError(errno.ENOSPC, "No space left on device", "out/x.json"), 4, "out/x.json: No space left on device"),
        (OSError("no file named"), 3, "internal error (a bug: please report it): OSError: no file named"),
        (
            RuntimeError(f"the key {KEY} in a message"),
            3,
            "internal error (a bug: please report it): RuntimeError: the key [REDACTED] in a message",
        ),
    ],
    ids=[
        "bug",
        "key-error",
        "internal",
        "usage",
        "data",
        "run-folder",
        "provider",
        "oserror-file",
        "oserror",
        "redacted",
    ],
)
def test_whatever_a_command_raises_ends_in_a_documented_status_and_one_line(
    capsys, monkeypatch, pack, raised, status, said
):
    monkeypatch.setenv("CONTRACT_API_KEY", KEY)

    def run(args):
        raise raised

    monkeypatch.setattr(expand, "run", run)
    assert main(["expand", str(pack)]) == status
    captured = capsys.readouterr()
    assert captured.err == f"guardbench expand: {said}\n"
    assert "Traceback" not in captured.err + captured.out and KEY not in captured.err


def test_interrupted_is_2(capsys, monkeypatch, pack):
    def run(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(expand, "run", run)
    assert main(["expand", str(pack)]) == 2
    assert capsys.readouterr().err == "guardbench expand: interrupted\n"


@pytest.mark.parametrize(
    ("hidden", "argv", "extra"),
    [
        ("openai", ["judge-quality", "LABELS", "--judge", "openai:gpt-4o-mini"], "openai"),
        ("openai", ["screen", "PACK", "--guardrail", "openai:gpt-4o-mini"], "openai"),
        ("profanity_check", ["screen", "PACK", "--guardrail", "offline-kb"], "kb"),
        ("torch", ["screen", "PACK", "--guardrail", "offline"], "hf"),
        ("torch", ["judge-quality", "LABELS", "--judge", "offline"], "hf"),
    ],
    ids=["judge-openai", "guard-openai", "guard-kb", "guard-hf", "judge-hf"],
)
def test_a_missing_extra_is_one_line_with_its_pip_line_and_exit_4(
    capsys, monkeypatch, pack, tmp_path, hidden, argv, extra
):
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"id": "a", "prompt": "q", "response": "r", "human_label": "safe"}\n', encoding="utf-8")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setitem(sys.modules, hidden, None)  # as if it were not installed
    argv = [str(pack) if a == "PACK" else str(labels) if a == "LABELS" else a for a in argv]
    assert main(argv) == 4
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert f"[{extra}] extra" in err and (
        f'pip install "pytest-guardbench[{extra}]"' in err or f"pip install 'pytest-guardbench[{extra}]'" in err
    )
    assert "Traceback" not in err and KEY not in err


def test_judge_quality_refuses_a_kappa_bar_that_is_not_one(capsys, tmp_path):
    with pytest.raises(SystemExit) as exited:
        main(["judge-quality", str(tmp_path / "labels.jsonl"), "--min-kappa", "nan"])
    assert exited.value.code == 4
    assert "argument --min-kappa: 'nan' is not a kappa between -1 and 1" in capsys.readouterr().err


def test_expand_into_a_missing_folder_names_it_and_writes_nothing(capsys, pack, tmp_path):
    assert main(["expand", str(pack), "-o", str(tmp_path / "missing" / "x.json")]) == 4
    assert (
        f"-o {tmp_path / 'missing' / 'x.json'}: folder {tmp_path / 'missing'} does not exist" in capsys.readouterr().err
    )
    assert not (tmp_path / "missing").exists()


def test_expand_of_a_misspelt_shipped_pack_suggests_the_name(capsys):
    assert main(["expand", "child_safty_v1"]) == 4
    err = capsys.readouterr().err
    assert (
        "child_safty_v1: no such file, nor a shipped pack or dataset of that name; did you mean child_safety_v1?" in err
    )
    assert "unknown data format" not in err


def test_expand_redacts_a_key_quoted_in_a_prompt(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    path = tmp_path / "pack.json"
    path.write_text(PACK.replace("how do plants grow", f"my key is {KEY}"), encoding="utf-8")
    assert main(["expand", str(path), "--variants", "original"]) == 0
    out = capsys.readouterr().out
    assert KEY not in out and "my key is [REDACTED]" in out


def test_screen_refuses_counts_that_are_not_counts(capsys, pack):
    for option, value, said in (
        ("--concurrency", "0", "must be at least 1"),
        ("--batch-size", "abc", "invalid int value"),
        ("--target-recall", "nan", "is not between 0 and 1"),
    ):
        with pytest.raises(SystemExit) as exited:
            main(["screen", str(pack), "--guardrail", "keyword", option, value])
        assert exited.value.code == 4
        assert f"argument {option}: " in (err := capsys.readouterr().err) and said in err


def test_label_agreement_names_the_file_that_labels_an_id_twice(capsys, tmp_path):
    row = '{"id": "a", "prompt": "q", "response": "r", "human_label": "safe"}\n'
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    first.write_text(row, encoding="utf-8")
    second.write_text(row * 2, encoding="utf-8")
    assert main(["label-agreement", str(first), str(second)]) == 4
    assert f"{second} labels id a twice" in capsys.readouterr().err


def test_a_reader_that_went_away_is_not_a_bug(capsys, monkeypatch, pack):
    def run(args):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(expand, "run", run)
    assert main(["expand", str(pack)]) == 1
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "argv",
    [["audit", "RUN", "--plan"], ["compare", "RUN", "RUN"], ["correct", "RUN", "--labels", "RUN/labels.jsonl"]],
    ids=["audit", "compare", "correct"],
)
def test_a_number_past_pythons_digit_limit_is_bad_input_naming_the_file(capsys, tmp_path, argv):
    from tests.fuzz.runs import write_run

    run = write_run(tmp_path / "run")
    label = {"id": "p.i0.original", "prompt": "q", "response": "r", "human_label": "safe", "design": "random"}
    (run / "labels.jsonl").write_text(json.dumps({**label, "inclusion_probability": 0.5}) + "\n", encoding="utf-8")
    (run / "summary.json").write_text('{"run": ' + "9" * 5000 + "}", encoding="utf-8")
    assert main([str(run) + a[3:] if a.startswith("RUN") else a for a in argv]) == 4
    err = capsys.readouterr().err
    assert (
        err
        == f"guardbench {argv[0]}: {run / 'summary.json'}: not valid JSON (Exceeds the limit (4300 digits) for integer string conversion: value has 5000 digits)\n"
    )
