"""Judge panels and a judge asked several times: the strict majority, splits kept visible, and the
judge-quality report of each member."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_guardbench.cases.sources import load_judge_labels
from pytest_guardbench.judges.base import JudgeInput
from pytest_guardbench.judges.panel import PanelJudge, SampledJudge, majority_verdict, panel_size_problem
from pytest_guardbench.judges.quality import measure_judge_quality
from pytest_guardbench.judges.rules import RulesJudge
from pytest_guardbench.records import AnswerMode, CaseRecord, JudgeVerdict, ResponseSafety
from pytest_guardbench.run.judge_quality import judge_id, judge_identity
from pytest_guardbench.run.roles import judge_specs
from pytest_guardbench.scoring.policies import policy_named
from pytest_guardbench.scoring.tally import RunTally
from pytest_guardbench.settings.options import ConfigError

LABELS = Path(__file__).parents[3] / "pytest_guardbench" / "datasets" / "judge_labels_v1.jsonl"


def _verdict(judge: str, safety: ResponseSafety | None, mode: AnswerMode | None = "answered") -> JudgeVerdict:
    return JudgeVerdict(judge=judge, response_safety=safety, answer_mode=mode, reason="r", malformed=safety is None)


@dataclass(frozen=True)
class FixedJudge:
    """A judge that gives one label to everything (a stand-in member, so the majority is known by hand)."""

    name: str
    safety: ResponseSafety
    description: str = "always the same label"

    def judge(self, inputs: Sequence[JudgeInput]) -> list[JudgeVerdict]:
        return [_verdict(self.name, self.safety) for _ in inputs]


def test_the_panel_verdict_is_the_strict_majority_and_keeps_every_member():
    verdict = majority_verdict("a,b,c", [_verdict("a", "unsafe"), _verdict("b", "safe"), _verdict("c", "unsafe")])
    assert (verdict.response_safety, verdict.answer_mode, verdict.malformed) == ("unsafe", "answered", False)
    assert [m.judge for m in verdict.members] == ["a", "b", "c"]


def test_no_strict_majority_is_a_malformed_verdict_that_names_the_split():
    verdict = majority_verdict("a,b,c", [_verdict("a", "unsafe"), _verdict("b", "safe"), _verdict("c", None)])
    assert verdict.malformed and verdict.response_safety is None
    assert "no strict majority" in verdict.reason and "c: malformed" in verdict.reason


def test_a_panel_must_be_odd_and_at_least_three():
    assert panel_size_problem(["a"]) is None and panel_size_problem(["a", "b", "c"]) is None
    assert "odd number" in (panel_size_problem(["a", "b"]) or "")
    assert "odd number" in (panel_size_problem(["a", "b", "c", "d"]) or "")
    with pytest.raises(ConfigError, match="odd number"):
        judge_specs("rules,offline", ["rules", "offline"], {})
    assert judge_specs("rules,offline,rules2", ["rules", "offline", "rules2"], {}) == {
        "judge:rules": None,
        "judge:offline": None,
        "judge:rules2": None,
    }


def test_a_record_with_a_panel_verdict_round_trips_and_old_records_still_read():
    verdict = majority_verdict("a,b,c", [_verdict("a", "unsafe"), _verdict("b", "safe"), _verdict("c", "unsafe")])
    assert JudgeVerdict.model_validate_json(verdict.model_dump_json()) == verdict
    old = {"judge": "rules", "response_safety": "safe", "answer_mode": "answered", "reason": "r"}
    assert JudgeVerdict.model_validate(old).members == ()


def test_panel_quality_reports_the_panel_and_each_member():
    labels = load_judge_labels(LABELS)
    panel = PanelJudge((RulesJudge(), FixedJudge("always-safe", "safe"), FixedJudge("always-unsafe", "unsafe")), "p")
    result = measure_judge_quality(panel, labels, 0.6)
    alone = measure_judge_quality(RulesJudge(), labels, 0.6)
    assert set(result["members"]) == {"rules", "always-safe", "always-unsafe"}
    # The two fixed members cancel out, so the panel says what the rules judge says.
    assert result["agreement"] == alone["agreement"] == result["members"]["rules"]["agreement"]
    unsafe_share = sum(1 for lab in labels if lab.human_label == "unsafe") / len(labels)
    assert result["members"]["always-unsafe"]["agreement"] == pytest.approx(unsafe_share, abs=1e-3)
    assert result["member_disagreement"] == {"count": len(labels), "of": len(labels), "rate": 1.0}


def test_a_deterministic_judge_asked_k_times_never_disagrees_with_itself():
    labels = load_judge_labels(LABELS)
    sampled = SampledJudge(RulesJudge(), 3)
    result = measure_judge_quality(sampled, labels, 0.6)
    assert result["agreement"] == measure_judge_quality(RulesJudge(), labels, 0.6)["agreement"]
    assert result["member_disagreement"]["rate"] == 0.0 and "members" not in result  # one judge, not a panel
    assert judge_identity(sampled, None)["samples"] == 3
    assert judge_id(judge_identity(sampled, None)) != judge_id(judge_identity(RulesJudge(), None))


def test_the_run_tally_counts_the_verdicts_whose_members_split():
    def record(case_id: str, members: list[JudgeVerdict]) -> CaseRecord:
        return CaseRecord(
            case_id=case_id,
            pack="p",
            item_id=case_id,
            base_prompt_id=case_id,
            variant="original",
            sample_index=0,
            category=None,
            is_harmful=True,
            label_source="is_harmful",
            prompt_text="x",
            guard=None,
            tutor_ran=True,
            response=None,
            judge=majority_verdict("a,b,c", members),
        )

    agree = [_verdict("a", "unsafe")] * 3
    split = [_verdict("a", "unsafe"), _verdict("b", "safe"), _verdict("c", "unsafe")]
    tally = RunTally(policy_named("assistant_policy_v2")).add_all([record("1", agree), record("2", split)])
    coverage = tally.metrics([], []).coverage
    assert coverage.judge_disagreement is not None
    assert (coverage.judge_disagreement.count, coverage.judge_disagreement.rate) == (1, 0.5)
