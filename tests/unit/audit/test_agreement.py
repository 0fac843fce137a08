"""Two labellings of the same responses: agreement per label, mismatched text refused, and the
developer's second labelling of 53 v3-audit replies that the README quotes as the labels' ceiling."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_guardbench.commands.main import main
from pytest_guardbench.audit.agreement import LabellingMismatch, kappa_interval, labeller_agreement
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


@given(st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from("abc")), min_size=1, max_size=60))
@settings(max_examples=300, deadline=None)
def test_a_kappa_interval_is_never_a_point_and_holds_its_kappa(pairs):
    kappa, low, high = kappa_interval(pairs)
    if kappa is None:
        assert low is None and high is None
        assert len({a for a, _ in pairs} | {b for _, b in pairs}) == 1, "undefined only when one label is all there is"
        return
    assert -1 <= low < high <= 1
    assert low <= kappa <= high


@pytest.mark.parametrize(
    ("pairs", "interval"),
    [
        # 20 of 20 agree, half of each side "a": Wilson's [20 / (20 + z^2), 1] = [0.8389, 1] through p_e = 0.5.
        ([("a", "a")] * 10 + [("b", "b")] * 10, (0.67775, 1.0)),
        # None agree: kappa -1, and the interval does not collapse onto it.
        ([("a", "b")] * 10 + [("b", "a")] * 10, (-1.0, -0.67775)),
    ],
)
def test_perfect_agreement_and_disagreement_keep_an_honest_interval(pairs, interval):
    kappa, low, high = kappa_interval(pairs)
    assert (low, high) == pytest.approx(interval, abs=1e-5) and kappa in (1.0, -1.0)


def _relabelled(case_id, harmful, first, second, labeller):
    return (
        JudgeLabel(
            id=case_id,
            prompt="p",
            response=f"r {case_id}",
            human_label=first[0],
            answer_mode=first[1],
            is_harmful=harmful,
            labeller="ana",
        ),
        JudgeLabel(
            id=case_id,
            prompt="p",
            response=f"r {case_id}",
            human_label=second[0],
            answer_mode=second[1],
            is_harmful=harmful,
            labeller=labeller,
        ),
    )


def test_two_labellings_that_differ_on_safe_prompts_as_the_main_jobs_did(tmp_path, capsys):
    """40 replies labelled twice: safety agrees on all; on the 16 safe prompts the policy label agrees on 11,
    the five others "answered" against "no answer" or "indirect" (a cut-off start, a misread question)."""
    pairs = [
        _relabelled(f"h{i}", True, ("safe", "refused_or_blocked"), ("safe", "refused_or_blocked"), "bo")
        for i in range(20)
    ]
    pairs += [_relabelled(f"hu{i}", True, ("unsafe", "answered"), ("unsafe", "answered"), "bo") for i in range(4)]
    pairs += [_relabelled(f"s{i}", False, ("safe", "answered"), ("safe", "answered"), "bo") for i in range(8)]
    pairs += [_relabelled(f"sn{i}", False, ("safe", "non_answer"), ("safe", "non_answer"), "bo") for i in range(3)]
    pairs += [
        _relabelled(f"sd{i}", False, ("safe", "answered"), ("safe", "non_answer" if i < 3 else "indirect"), "bo")
        for i in range(5)
    ]
    paths = []
    for which, rows in (("a", [a for a, _ in pairs]), ("b", [b for _, b in pairs])):
        path = tmp_path / f"{which}.jsonl"
        path.write_text("".join(json.dumps(r.model_dump(mode="json", exclude_none=True)) + "\n" for r in rows))
        paths.append(str(path))
    assert main(["label-agreement", *paths, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["safety"]["agreement"] == 1.0
    safe = result["domains"]["safe"]["policy_label"]
    assert safe["rows"] == 16 and safe["agreement"] == pytest.approx(11 / 16)
    assert safe["cohen_kappa"] == pytest.approx(0.375) and safe["cohen_kappa"] < 0.6
    low, high = safe["kappa_interval_95"]
    assert low < 0.375 < high
    assert result["domains"]["harmful"]["policy_label"]["agreement"] == 1.0
    assert result["labellers"] == {"first": ["ana"], "second": ["bo"]}
    assert sorted(row["unit"] for row in result["disagreements"]) == [f"sd{i}" for i in range(5)]
    assert all(row["first"] == ["safe", "answered"] and row["domain"] == "safe" for row in result["disagreements"])
    assert main(["label-agreement", *paths]) == 0
    text = capsys.readouterr().out
    assert "safe prompts:" in text and "policy label: agreement 0.688" in text and "kappa 0.375 [" in text


def test_a_conversations_replies_are_matched_by_turn():
    first = [_label("c", "safe", "answered").model_copy(update={"turn": t}) for t in (1, 2)]
    second = [_label("c", "safe", "answered").model_copy(update={"turn": 2})]
    result = labeller_agreement(first, second)
    assert result["shared_rows"] == 1 and result["only_in_first"] == 1
