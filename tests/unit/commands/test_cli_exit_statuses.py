"""`guardbench` exit statuses: a usage error is 4 (as pytest's; 2 means interrupted), the table is in
`--help`, and a judge that cannot answer is one line, never a traceback."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_guardbench.commands.exit_status import EXIT_STATUSES
from pytest_guardbench.commands.main import main

LABELS = Path(__file__).resolve().parents[3] / "pytest_guardbench" / "datasets" / "judge_audit_smollm2_v5.jsonl"

USAGE = [
    (["nosuch"], "invalid choice: 'nosuch'"),
    ([], "the following arguments are required: command"),
    (["merge"], "the following arguments are required: run_dirs, --out"),
    (
        ["screen", "pack.json", "--guardrail", "keyword", "--batch-size", "abc"],
        "argument --batch-size: invalid int value",
    ),
    (["screen", "pack.json", "--guardrail", "keyword", "--cache", "sometimes"], "argument --cache: invalid choice"),
    (["rejudge"], "the following arguments are required: run_dir"),
    (["judge-quality", str(LABELS), "--min-kappa", "high"], "argument --min-kappa: invalid float value"),
    (["expand"], "the following arguments are required"),
    (["label-agreement", "a.jsonl"], "the following arguments are required"),
    (["audit"], "the following arguments are required"),
    (["compare"], "the following arguments are required"),
    (["import-seed"], "the following arguments are required"),
]


@pytest.mark.parametrize(("argv", "message"), USAGE, ids=[" ".join(a) or "(none)" for a, _ in USAGE])
def test_a_command_line_usage_error_exits_4_naming_what_is_wrong(capsys, argv, message):
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 4
    assert message in capsys.readouterr().err


def test_help_lists_every_exit_status():
    shown = subprocess.run(
        [sys.executable, "-m", "pytest_guardbench.commands.main", "--help"], capture_output=True, text=True, timeout=60
    ).stdout
    assert "exit statuses" in shown
    for code, meaning in EXIT_STATUSES:
        assert f"\n  {code}  {meaning}" in shown
    assert [code for code, _ in EXIT_STATUSES] == [0, 1, 2, 3, 4, 5, 6]


def _closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_judge_quality_with_a_judge_that_cannot_answer_is_one_line_and_exit_4(capsys):
    judge = f"vllm:m@{_closed_port_url()}"
    assert main(["judge-quality", str(LABELS), "--judge", judge]) == 4
    err = capsys.readouterr().err
    assert f"guardbench judge-quality: --judge {judge}: judge preflight failed: " in err and "connection refused" in err
    assert "Traceback" not in err


def test_the_readme_table_is_the_one_the_code_has():
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")
    for code, meaning in EXIT_STATUSES:
        assert f"| {code} | {meaning} |" in readme
