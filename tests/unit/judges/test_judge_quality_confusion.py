"""judge-quality's per-class confusion: the safety 2x2, the answer-mode 4x4 and which confusions change
the policy label, in measure_judge_quality's result and in the command's text output; and a labels file with the
v6 audit's extra fields loads."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_guardbench.cases.sources import load_judge_labels
from pytest_guardbench.commands.judge_quality import confusion_lines
from pytest_guardbench.judges.base import JudgeInput
from pytest_guardbench.judges.quality import measure_judge_quality
from pytest_guardbench.records import ANSWER_MODES, JudgeLabel, JudgeVerdict


@dataclass
class ByResponse:
    """A stand-in judge whose verdict is written in the response, so each row's confusion is chosen."""

    name: str = "by-response"
    description: str = "reads its verdict from the response"

    def judge(self, inputs: Sequence[JudgeInput]) -> list[JudgeVerdict]:
        verdicts = []
        for item in inputs:
            safety, mode = item.response.split()
            verdicts.append(JudgeVerdict(judge=self.name, response_safety=safety, answer_mode=mode, reason="written"))  # type: ignore[arg-type]
        return verdicts


def _label(n: int, harmful: bool, human: tuple[str, str], judged: tuple[str, str]) -> JudgeLabel:
    return JudgeLabel(
        id=f"r{n}",
        prompt="p",
        response=" ".join(judged),
        human_label=human[0],
        answer_mode=human[1],  # type: ignore[arg-type]
        is_harmful=harmful,
    )


LABELS = [
    # harmful prompt: a safety confusion changes the policy label, a mode confusion does not
    _label(0, True, ("unsafe", "answered"), ("safe", "answered")),
    _label(1, True, ("safe", "refused_or_blocked"), ("safe", "non_answer")),
    _label(2, True, ("safe", "refused_or_blocked"), ("safe", "refused_or_blocked")),
    # safe prompt: answered vs not answered changes it, two not-answered modes do not, safety does
    _label(3, False, ("safe", "answered"), ("safe", "indirect")),
    _label(4, False, ("safe", "non_answer"), ("safe", "refused_or_blocked")),
    _label(5, False, ("safe", "answered"), ("unsafe", "answered")),
    _label(6, False, ("safe", "answered"), ("safe", "answered")),
]


def test_confusion_tables_count_human_rows_by_judge_columns():
    result = measure_judge_quality(ByResponse(), LABELS, min_kappa=0.6)
    assert result["safety_confusion"] == {"safe": {"safe": 5, "unsafe": 1}, "unsafe": {"safe": 1, "unsafe": 0}}
    modes = result["answer_mode_confusion"]
    assert list(modes) == list(ANSWER_MODES) and all(list(row) == list(ANSWER_MODES) for row in modes.values())
    assert modes["answered"] == {"answered": 3, "refused_or_blocked": 0, "indirect": 1, "non_answer": 0}
    assert modes["refused_or_blocked"] == {"answered": 0, "refused_or_blocked": 1, "indirect": 0, "non_answer": 1}
    assert modes["non_answer"]["refused_or_blocked"] == 1 and sum(modes["indirect"].values()) == 0
    assert sum(sum(row.values()) for row in modes.values()) == len(LABELS)


def test_which_confusions_change_the_policy_label():
    changing = measure_judge_quality(ByResponse(), LABELS, min_kappa=0.6)["policy_changing_confusions"]
    assert changing["harmful_prompts"] == {"rows": 3, "safety_confused": 1, "policy_label_changed": 1}
    assert changing["safe_prompts"] == {
        "rows": 4,
        "safety_confused": 1,
        "answered_vs_not_confused": 1,
        "policy_label_changed": 2,
    }
    assert changing["answer_mode_confusions_leaving_policy_label"] == 2  # rows 1 and 4


def test_the_text_output_shows_both_tables_and_the_policy_line():
    lines = confusion_lines(measure_judge_quality(ByResponse(), LABELS, min_kappa=0.6))
    text = "\n".join(lines)
    assert "response safety confusion (human rows x judge columns):" in text
    assert "answer mode confusion (human rows x judge columns):" in text
    safe_row = next(line for line in lines if line.split()[:1] == ["safe"])
    assert safe_row.split()[1:] == ["5", "1"]
    assert "harmful prompts (only safety counts) 1 of 3" in text and "safe prompts" in text and "2 of 4" in text


def test_a_malformed_verdict_gets_its_own_column():
    @dataclass
    class Malformed(ByResponse):
        def judge(self, inputs: Sequence[JudgeInput]) -> list[JudgeVerdict]:
            return [
                JudgeVerdict(judge=self.name, response_safety=None, answer_mode=None, reason="?", malformed=True)
                for _ in inputs
            ]

    result = measure_judge_quality(Malformed(), LABELS[:2], min_kappa=0.6)
    assert result["safety_confusion"]["unsafe"] == {"safe": 0, "unsafe": 0, "malformed": 1}
    assert result["answer_mode_confusion"]["answered"]["malformed"] == 1
    assert result["policy_changing_confusions"]["harmful_prompts"]["policy_label_changed"] == 2


def test_a_labels_file_with_finish_reason_and_note_loads(tmp_path):
    row = {
        "id": "slur-x-01h-original-original",
        "prompt": "p",
        "response": "r",
        "finish_reason": "length",
        "human_label": "safe",
        "answer_mode": "non_answer",
        "assistant_policy_label": "correct",
        "bucket": "b",
        "is_harmful": True,
        "category": "Hateful",
        "source": "tutor",
        "split": "dev",
        "note": "loops",
    }
    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    (label,) = load_judge_labels(path)
    assert label.finish_reason == "length" and label.note == "loops" and label.split == "dev"
