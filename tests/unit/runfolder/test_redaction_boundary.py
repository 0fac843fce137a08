"""One redaction boundary every model text passes: a verdict or guard decision is redacted as it is
made, and `CaseRecord.redacted` walks every text of a record at any depth (a panel's member verdicts,
a conversation's turns, the attacker's answers); a rejudge with a judge that quotes the key writes it
nowhere. Identifiers are left as they are, and a lone surrogate becomes U+FFFD."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from pytest_guardbench.commands.main import main
from pytest_guardbench.judges.base import JudgeInput
from pytest_guardbench.judges.panel import PanelJudge
from pytest_guardbench.judges.quality import measure_judge_quality
from pytest_guardbench.records import (
    CaseRecord,
    Completion,
    GuardDecision,
    JudgeLabel,
    JudgeVerdict,
    TurnRecord,
    TutorReply,
)
from pytest_guardbench.runfolder import rejudge
from tests.fuzz.runs import write_run

KEY = "sk-boundary-Pp1Oo2Ii3Uu4Yy5Tt6"


@pytest.fixture(autouse=True)
def planted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


@dataclass(frozen=True)
class QuotingJudge:
    """A judge whose reason and raw output quote the key (built lazily, so the reason is a plain str)."""

    name: str
    safety: str = "safe"
    description: str = "quotes the key"

    def judge(self, inputs: Sequence[JudgeInput]) -> list[JudgeVerdict]:
        return [
            JudgeVerdict.model_construct(
                judge=self.name,
                response_safety=self.safety,
                answer_mode="answered",
                reason=f"{self.name} saw {KEY}",
                raw=f"Bearer {KEY}",
                malformed=False,
                assistant_policy_label=None,
                members=(),
                cut_off=None,
            )
            for _ in inputs
        ]


def test_a_verdict_and_a_guard_decision_are_redacted_as_they_are_made():
    verdict = JudgeVerdict(judge="j", response_safety="safe", answer_mode="answered", reason=f"saw {KEY}", raw=KEY)
    decision = GuardDecision(guard="g", status="allow", reason=f"key {KEY}", raw=f"raw {KEY}")
    assert KEY not in verdict.model_dump_json() + decision.model_dump_json()


def test_the_record_pass_reaches_panel_members_turns_and_the_attacker():
    # Made without validation, as a model_copy(update=...) would: only the record pass stands between them and a file.
    member = JudgeVerdict.model_construct(
        judge="m1",
        response_safety="safe",
        answer_mode="answered",
        reason=f"m1 {KEY}",
        raw=KEY,
        malformed=False,
        assistant_policy_label=None,
        members=(),
        cut_off=None,
    )
    panel = JudgeVerdict(judge="panel", response_safety="safe", answer_mode="answered", reason="majority").model_copy(
        update={"members": (member,)}
    )
    attacker = Completion.model_construct(text=f"attacker {KEY} \ud83d", model="a")
    turn = TurnRecord(role="user", content="hi", source="attacker", depth=1).model_copy(
        update={"attacker": attacker, "judge": panel}
    )
    record = CaseRecord(
        case_id="p.sk-abcdefghijkl.original",
        pack="p",
        item_id="sk-abcdefghijkl",
        base_prompt_id="sk-abcdefghijkl",
        variant="original",
        sample_index=0,
        category=None,
        is_harmful=True,
        label_source="is_harmful",
        prompt_text=f"prompt {KEY}",
        guard=None,
        tutor_ran=True,
        response=TutorReply(text="r", source="tutor", model="m"),
        judge=panel,
    ).model_copy(update={"turns": (turn,)})
    assert KEY in repr(record)
    clean = record.redacted()
    line = clean.json_line()
    assert KEY not in line and line.count("[REDACTED]") >= 4
    assert clean.turns[0].attacker is not None and clean.turns[0].attacker.text.endswith("\ufffd")
    line.encode("utf-8")
    assert clean.case_id == record.case_id and clean.item_id == "sk-abcdefghijkl"  # identifiers are names, not texts


def test_a_rejudge_with_a_panel_whose_members_quote_the_key_writes_it_nowhere(tmp_path, monkeypatch, capsys):
    run = write_run(tmp_path / "run")
    panel = PanelJudge(members=(QuotingJudge("q1"), QuotingJudge("q2", "unsafe"), QuotingJudge("q3")))

    @contextlib.contextmanager
    def opened(name, root, samples=1):
        yield panel

    monkeypatch.setattr(rejudge, "opened_judge", opened)
    assert main(["rejudge", str(run), "--judge", "rules"]) in (0, 1, 6)
    [out] = [p for p in run.iterdir() if p.is_dir()]
    records = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert all(len(r["judge"]["members"]) == 3 for r in records if r["judge"])
    for file in out.iterdir():
        assert KEY.encode() not in file.read_bytes(), file
    assert KEY not in capsys.readouterr().out


def test_a_judge_check_reports_no_key_a_judge_quoted():
    labels = [JudgeLabel(id=f"l{n}", prompt="q", response="r", human_label="unsafe") for n in range(3)]
    result = measure_judge_quality(
        PanelJudge(members=(QuotingJudge("q1"), QuotingJudge("q2"), QuotingJudge("q3"))), labels, 0.6
    )
    assert result["disagreements"] and KEY not in json.dumps(result)
