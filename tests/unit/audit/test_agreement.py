"""Two labellings of the same responses: agreement per label, mismatched text refused, and the
developer's second labelling of 53 v3-audit replies that the README quotes as the labels' ceiling."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_guardbench.commands.main import main
from pytest_guardbench.audit.agreement import LabellingMismatch, labeller_agreement
from pytest_guardbench.records import JudgeLabel

DATASETS = Path(__file__).resolve().parents[3] / "pytest_guardbench" / "datasets"


def _label(case_id: str, safety: str, mode: str, harmful: bool = True, response: str = "reply") -> JudgeLabel:
    return JudgeLabel(
        id=case_id, prompt="p", response=response, human_label=safety, answer_mode=mode, is_harmful=harmful
    )


def test_agreement_is_counted_over_shared_ids_only():
    first = [
        _label("a", "safe", "refused_or_blocked"),
        _label("b", "unsafe", "answered"),
        _label("c", "safe", "answered", harmful=False),
        _label("only-first", "safe", "answered"),
    ]
    second = [
        _label("a", "safe", "non_answer"),  # mode differs; policy label (harmful, safe) agrees
        _label("b", "unsafe", "answered"),
        _label("c", "safe", "non_answer", harmful=False),  # a safe prompt not answered: policy differs too
        _label("only-second", "unsafe", "answered"),
    ]
    result = labeller_agreement(first, second)
    assert (result["shared_rows"], result["only_in_first"], result["only_in_second"]) == (3, 1, 1)
    assert result["safety"]["agreement"] == 1.0 and result["safety"]["cohen_kappa"] == 1.0
    assert result["answer_mode"]["agreement"] == pytest.approx(1 / 3)
    assert result["policy_label"]["agreement"] == pytest.approx(2 / 3)
    assert [row["id"] for row in result["disagreements"]] == ["a", "c"]


def test_a_shared_id_with_different_text_is_refused():
    with pytest.raises(LabellingMismatch, match="first: a"):
        labeller_agreement([_label("a", "safe", "answered")], [_label("a", "safe", "answered", response="other")])


def test_an_id_labelled_twice_in_one_file_is_refused():
    with pytest.raises(LabellingMismatch, match="second file labels id a twice"):
        labeller_agreement([_label("a", "safe", "answered")], [_label("a", "safe", "answered")] * 2)


def test_the_developers_second_labelling_of_v3_replies(capsys):
    """53 replies of the v3 audit relabelled blind in a later session (the 7 of a 60-reply sample whose
    earlier labels had been read that session were left out): the README's labeller-agreement numbers."""
    code = main(
        [
            "label-agreement",
            str(DATASETS / "judge_audit_smollm2_v3.jsonl"),
            str(DATASETS / "judge_audit_smollm2_v3_relabel.jsonl"),
            "--json",
        ]
    )
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["shared_rows"] == 53
    assert result["safety"]["agreement"] == 1.0
    assert result["answer_mode"]["agreement"] == pytest.approx(45 / 53)
    assert result["policy_label"]["agreement"] == pytest.approx(52 / 53)


def test_files_sharing_no_id_are_an_error_naming_both(capsys):
    code = main(
        [
            "label-agreement",
            str(DATASETS / "judge_audit_smollm2_v4.jsonl"),
            str(DATASETS / "judge_audit_smollm2_v5.jsonl"),
        ]
    )
    assert code == 4 and "judge_audit_smollm2_v5.jsonl share no id" in capsys.readouterr().err
