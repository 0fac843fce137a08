"""Key-valued strings (the values of the keys planted in the environment for the test, alone or inside
other text) in every argument and in a labels file a command reads. Whatever the command does with
them, no planted key reaches its output or the files it writes. (A key read from a variable whose name
does not say it holds one, named by a model spec, is issue 43's keys item, tested with it.)"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from pytest_guardbench.commands import audit
from pytest_guardbench.commands.main import main
from tests.fuzz.conftest import check_outcome, files_under, fuzz
from tests.fuzz.runs import label_row, write_run
from tests.fuzz.strategies import key_text
from tests.fuzz.test_fuzz_argv import argvs, places  # noqa: F401 - `places` is a fixture this module uses

pytestmark = pytest.mark.usefixtures("planted_key")


@fuzz(examples=60)
@given(st.data())
def test_a_key_in_any_argument_reaches_no_output(capsys, monkeypatch, places, data):  # noqa: F811
    monkeypatch.setattr(audit, "run_audit", lambda *a, **k: None)
    monkeypatch.setattr(audit, "run_adjudication", lambda *a, **k: None)
    monkeypatch.chdir(places["folder"])
    argv = data.draw(argvs(places))
    index = data.draw(st.integers(1, max(len(argv) - 1, 1)))
    argv[min(index, len(argv) - 1)] = data.draw(key_text)
    try:
        code = main(argv)
    except SystemExit as exit:
        code = exit.code if isinstance(exit.code, int) else 4
    captured = capsys.readouterr()
    event(f"{argv[0]}: exit {code}")
    check_outcome(code, captured.out, captured.err, files=files_under(Path(places["folder"])))


@fuzz(examples=30)
@given(
    key=key_text,
    field=st.sampled_from(["prompt", "response", "id", "labeller"]),
    command=st.sampled_from(["correct", "judge-quality", "label-agreement"]),
)
def test_a_key_in_a_labels_file_reaches_no_output(capsys, key, field, command):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        run = write_run(root / "run")
        row = label_row(**{field: key if field != "id" else f"p.{key}"})
        labels = root / "labels.jsonl"
        labels.write_text(json.dumps(row) + "\n" + json.dumps({**row, "id": row["id"]}) + "\n", encoding="utf-8")
        argv = {
            "correct": ["correct", str(run), "--labels", str(labels)],
            "judge-quality": ["judge-quality", str(labels), "--judge", "rules"],
            "label-agreement": ["label-agreement", str(labels), str(labels)],
        }[command]
        code = main(argv)
        captured = capsys.readouterr()
        event(f"{command}: exit {code}")
        check_outcome(code, captured.out, captured.err, files=files_under(run))  # what it wrote, not its input
