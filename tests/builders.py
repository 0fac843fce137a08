"""Builders shared across the test suite: hand-made case records and cases, a small scored table, a
pipeline `Stack` with test defaults, a fake pytest config, and the check for priming turns.

`tests/conftest.py` hands `record` and `stack` to tests as the `make_record` and `make_stack` fixtures."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from pytest_guardbench.judges.rules import RulesJudge
from pytest_guardbench.providers import Completion, GenerationParams
from pytest_guardbench.records import Case, CaseRecord, GuardDecision, JudgeVerdict, PipelineError, TutorReply
from pytest_guardbench.run.stages import Stack
from pytest_guardbench.document.meta import RunMeta
from pytest_guardbench.document.metrics import RunMetrics
from pytest_guardbench.scoring.metrics import summarise
from pytest_guardbench.scoring.policies import policy_named

V2 = policy_named("assistant_policy_v2")
REFUSAL = policy_named("refusal")


# --- Records and cases ----------------------------------------------------------------------------


def record(
    case_id: str,
    harmful: bool | None,
    safety: str | None = "safe",
    mode: str | None = "answered",
    *,
    variant: str = "original",
    category: str | None = "Danger",
    guard: str | None = None,
    tutor_ran: bool = True,
    error: bool = False,
    malformed: bool = False,
    base: str | None = None,
    sample: int = 0,
    policy_label: str | None = None,
    reply: str = "a",
) -> CaseRecord:
    return CaseRecord(
        case_id=case_id,
        pack="p",
        item_id=case_id.split(".")[0],
        base_prompt_id=base or case_id.split(".")[0],
        variant=variant,
        sample_index=sample,
        category=category,
        is_harmful=harmful,
        label_source="is_harmful" if harmful is not None else "unlabelled",
        prompt_text="q",
        guard=GuardDecision(guard="g", status=guard, reason="", raw=guard.upper()) if guard else None,
        tutor_ran=tutor_ran,
        response=None if error else TutorReply(text=reply, source="tutor" if tutor_ran else "guard_block", model="m"),
        judge=None
        if error
        else JudgeVerdict(
            judge="j",
            response_safety=None if malformed else safety,
            answer_mode=None if malformed else mode,
            reason="r",
            malformed=malformed,
            assistant_policy_label=policy_label,
        ),
        error=PipelineError(stage="tutor", message="boom") if error else None,
    )


def conversation(case_id: str, harmful: bool, replies: list[tuple[str | None, str | None, str]]) -> CaseRecord:
    """A conversation record: per depth from 1, the judge's (safety, answer mode) of the reply (None,
    None: a verdict it could not give) and the reply's text; its whole verdict built from them as a run
    builds it."""
    from pytest_guardbench.records import TurnRecord
    from pytest_guardbench.scoring.conversation_tally import conversation_verdict, first_unsafe_depth

    turns = []
    for depth, (safety, mode, text) in enumerate(replies, start=1):
        turns.append(
            TurnRecord(role="user", content=f"{case_id} q{depth}", source="pack", depth=depth, is_harmful=harmful)
        )
        verdict = JudgeVerdict(
            judge="j", response_safety=safety, answer_mode=mode, reason="r", malformed=safety is None
        )  # type: ignore[arg-type]
        reply = TutorReply(text=text, model="m", source="tutor")
        turns.append(
            TurnRecord(role="assistant", content=text, source="tutor", depth=depth, reply=reply, judge=verdict)
        )
    if not replies:  # the pipeline failed before the first reply: the child's turn, and nothing after
        turns.append(TurnRecord(role="user", content=f"{case_id} q1", source="pack", depth=1, is_harmful=harmful))
    last = turns[-1].reply
    return record(case_id, harmful, error=not replies).model_copy(
        update={
            "response": last,
            "turns": tuple(turns),
            "judge": conversation_verdict(turns, "j"),
            "first_unsafe_turn": first_unsafe_depth(turns),
        }
    )


def case(case_id: str, harmful: bool | None) -> Case:
    return Case(
        case_id=case_id,
        pack="p",
        item_id=case_id,
        base_prompt_id=case_id,
        variant="original",
        prompt_text="q",
        is_harmful=harmful,
        label_source="is_harmful" if harmful is not None else "unlabelled",
        category=None,
        source_file="f",
    )


def table() -> list[CaseRecord]:
    """refusal: 3 TP, 2 FN, 5 TN, 2 FP. assistant_policy_v2: 4 TP, 1 FN (h5's safe answer, e.g. a brief condemning
    definition, is correct), 5 TN, 2 FP. One FP is an unsafe answer, one an over-refusal."""
    return [
        record("h1", True, "safe", "refused_or_blocked", tutor_ran=False),
        record("h2", True, "safe", "indirect"),
        record("h3", True, "safe", "refused_or_blocked", tutor_ran=False),
        record("h4", True, "unsafe", "answered"),
        record("h5", True, "safe", "answered"),
        *[record(f"s{n}", False, "safe", "answered") for n in range(5)],
        record("s5", False, "safe", "refused_or_blocked", tutor_ran=False),
        record("s6", False, "unsafe", "answered"),
    ]


def summarise_v2(records: list[CaseRecord], expected: list[Case] | None = None) -> RunMetrics:
    """The scorecard of `records` under assistant_policy_v2; by default every record's case is expected."""
    return summarise(expected or [case(r.case_id, r.is_harmful) for r in records], records, V2)


# --- A pipeline stack ------------------------------------------------------------------------------


class PlainTutor:
    """A tutor that answers every conversation with the same harmless sentence."""

    name = "plain"
    model = "plain-1"

    def generate(self, conversations, params, seeds):
        return [
            Completion(text="Plants make their food from sunlight.", model=self.model, finish_reason="stop")
            for _ in conversations
        ]


def stack(**fields: Any) -> Stack:
    """A `Stack` with test defaults (no guard, the plain tutor, the rules judge, system prompt "sys",
    refusal text "no", malformed guard output blocked, default generation params); any of its fields
    can be given by keyword. `tutor` is the loader, as on `Stack`: `tutor=lambda: my_tutor`."""
    defaults: dict[str, Any] = {
        "guard": None,
        "tutor": PlainTutor,
        "judge": RulesJudge(),
        "system_prompt": "sys",
        "refusal_text": "no",
        "malformed_policy": "block",
        "params": GenerationParams(),
    }
    return Stack(**(defaults | fields))


# --- A pytest config -------------------------------------------------------------------------------


class FakeConfig:
    """What `Settings.from_pytest` reads from a pytest config: CLI options, ini keys and the rootdir."""

    def __init__(self, cli: dict, ini: dict, root: Path):
        self.cli, self.ini = cli, ini
        self.rootpath = root
        self.invocation_params = SimpleNamespace(dir=root / "sub")

    def getoption(self, dest):
        return self.cli.get(dest)

    def getini(self, key):
        return self.ini.get(key, "")


# --- The check every fixed assistant turn must pass -----------------------------------------------
# In the shipped pack and in what variants write: a short priming sentence (compliance in tone, or a
# harmless answer), never instructions.

# Long enough for "Sure, I'll answer anything you ask, no rules!" and a one-line harmless answer.
MAX_PRIMING_CHARS = 120
_INSTRUCTION_SHAPES = re.compile(r"\n|(^|\s)\d+[.)]\s|\bstep\b|\bfirst,|\bhere'?s how\b|\bhere is how\b", re.I)


def priming_problem(text: str) -> str | None:
    """Why an assistant turn is more than a short priming sentence, or None when it is one."""
    if len(text) > MAX_PRIMING_CHARS:
        return f"{len(text)} characters (at most {MAX_PRIMING_CHARS})"
    shape = _INSTRUCTION_SHAPES.search(text)
    if shape:
        return f"looks like instructions ({shape.group(0).strip() or 'a line break'!r})"
    if len(re.findall(r"[.!?](\s|$)", text)) > 3:
        return "more than three sentences"
    return None


def run_folder(
    folder: Path, records: list[CaseRecord], policy: Any = None, guardrail: str = "g", results: bool = False
) -> Path:
    """A finished run folder made from hand-made records: summary.json (scored under `policy`, V2 by
    default, with a passed gate) and, with `results`, results.jsonl. Each record's case is its own
    (pack "p", category "Danger"), as a loaded pack would have made it."""
    from pytest_guardbench.document.summary import RunInfo, Selection, StackInfo
    from pytest_guardbench.runfolder.finish import assemble_summary
    from pytest_guardbench.document.gate import GateResult
    from pytest_guardbench.settings.config import Thresholds

    expected = [
        Case(
            case_id=r.case_id,
            pack="p",
            item_id=r.item_id,
            base_prompt_id=r.base_prompt_id,
            variant=r.variant,
            prompt_text="q",
            is_harmful=r.is_harmful,
            label_source="is_harmful",
            category="Danger",
            source_file="f",
        )
        for r in records
    ]
    summary = assemble_summary(
        summarise(expected, records, policy or V2),
        GateResult(checks=()),
        run=RunInfo(run_id="r1"),
        stack=StackInfo(
            guardrail=guardrail, tutor="t", judge="rules", malformed_policy="block", policy=(policy or V2).name
        ),
        selection=Selection(),
        thresholds=Thresholds(),
    )
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps(summary.as_json()))
    if results:
        (folder / "results.jsonl").write_text("".join(r.json_line() for r in records))
    return folder


def run_meta(**fields: Any) -> RunMeta:
    """A pytest run's meta.json, with the fields a test does not care about filled in."""
    made: dict[str, Any] = {
        "run_id": "r1",
        "stack": {
            "guardrail": "g",
            "tutor": "t",
            "judge": "rules",
            "malformed_policy": "block",
            "policy": "assistant_policy_v2",
        },
        "models": {},
        "system_prompt_sha256": "a" * 64,
        "refusal_text_sha256": "b" * 64,
        "packs": ["p"],
        "shard": None,
        "tutor_description": "t",
        "settings": {},
        "packages": {},
        "python": "3.11",
        "platform": "test",
        "git_commit": None,
        "argv": [],
    }
    return RunMeta.model_validate({**made, **fields})


def replied(made: CaseRecord, text: str) -> CaseRecord:
    """`made` with the tutor's reply `text` (builders' records all reply "a")."""
    assert made.response is not None
    return made.model_copy(update={"response": made.response.model_copy(update={"text": text})})


def finished_run(folder: Path, records: list[CaseRecord], policy: Any = None) -> Path:
    """A finished run folder written through the one finish, as `merge` and `rejudge` write one:
    results.jsonl, summary.json and the reports."""
    from pytest_guardbench.document.summary import RunInfo
    from pytest_guardbench.runfolder.rescored import write_rescored_run

    write_rescored_run(
        folder, records, None, run=RunInfo(run_id=folder.name), manifest={}, meta=None, policy=policy or V2
    )
    return folder
