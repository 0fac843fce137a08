"""The pipeline tells the judge which tutor replies stopped at the token limit."""

from __future__ import annotations

from dataclasses import dataclass, field

from pytest_guardbench.judges.base import JudgeInput
from pytest_guardbench.judges.rules import RulesJudge
from pytest_guardbench.providers import Completion
from pytest_guardbench.run.engine import run_cases
from tests.pipeline.test_pipeline import FixedGuard
from tests.builders import case


class _HalfCutTutor:
    """Stops at the token limit on prompts that start with "long", and finishes the others."""

    name = "half-cut"
    model = "half-cut-1"

    def generate(self, conversations, params, seeds):
        return [
            Completion(
                text="Plants make food from light and",
                model=self.model,
                finish_reason="length" if c[-1]["content"].startswith("long") else "stop",
            )
            for c in conversations
        ]


@dataclass
class _RecordingJudge:
    """The rules judge, keeping every input it was given."""

    seen: list[JudgeInput] = field(default_factory=list)
    name: str = "recording"
    description: str = "the rules judge, keeping its inputs"

    def judge(self, inputs):
        self.seen.extend(inputs)
        return RulesJudge().judge(inputs)


def test_the_judge_input_says_which_tutor_replies_were_cut_off(make_stack):
    judge = _RecordingJudge()
    stack = make_stack(
        guard=FixedGuard({"long question": "ALLOW", "short question": "ALLOW", "blocked": "BLOCK: x"}),
        tutor=_HalfCutTutor,
        judge=judge,
    )
    cases = [
        case(f"c{i}", False).model_copy(update={"prompt_text": p})
        for i, p in enumerate(["long question", "short question", "blocked"])
    ]
    records = run_cases(cases, stack)
    cut_off = {item.prompt: item.cut_off for item in judge.seen}
    assert cut_off == {"long question": True, "short question": False, "blocked": False}
    assert [r.response.finish_reason for r in records] == ["length", "stop", None]
