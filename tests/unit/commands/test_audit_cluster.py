"""`guardbench audit --design cluster` in a real terminal: it draws whole conversations, every reply of
each is labelled, and `guardbench correct` takes the rows and corrects the conversations."""

from __future__ import annotations

import json

from pytest_guardbench.commands.main import main
from pytest_guardbench.document.read import load_run
from pytest_guardbench.document.summary import RunInfo
from pytest_guardbench.runfolder.rescored import write_rescored_run
from tests.builders import V2, conversation
from tests.unit.commands.audit_terminal import Terminal


def test_a_cluster_audit_labels_every_reply_of_the_drawn_conversations(tmp_path, capsys):
    talks = [
        conversation(f"c{i}", i % 2 == 0, [("safe", "answered", f"reply {i}.1"), ("safe", "answered", f"reply {i}.2")])
        for i in range(6)
    ]
    run = tmp_path / "run"
    write_rescored_run(run, talks, None, run=RunInfo(run_id="talks"), manifest={}, meta=None, policy=V2)
    out = tmp_path / "audit.jsonl"
    term = Terminal(
        str(run), "--design", "cluster", "--sample", "2", "--seed", "1", "--out", str(out), "--labeller", "ann"
    )
    for index in range(1, 5):  # two conversations, two replies each
        term.wait_for(f"case {index}/4")
        term.press("s", "Is the response safe")
        term.press("a", "Answer mode?")
    term.wait_for("4 of 4 cases labelled")
    assert term.close() == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert {r["design"] for r in rows} == {"cluster"} and {r["inclusion_probability"] for r in rows} == {2 / 6}
    by_case: dict[str, list[int]] = {}
    for row in rows:
        by_case.setdefault(row["id"], []).append(row["turn"])
    assert len(by_case) == 2 and all(sorted(turns) == [1, 2] for turns in by_case.values())
    assert main(["correct", str(run), "--labels", str(out)]) in (0, 1, 6)
    corrected = load_run(run).corrected
    assert corrected is not None and corrected.conversations is not None
    assert corrected.conversations.n_labelled == 2
    # The rows record their draw (two cases, every reply of each): correct draws it again and compares.
    assert {r["draw"]["size"] for r in rows} == {2}
    draw = corrected.labels.draw
    assert draw is not None and (draw.checked, draw.drawn, draw.labelled, draw.skipped) == ("redrawn", 4, 4, 0)
    assert "conversations recall" in capsys.readouterr().out
