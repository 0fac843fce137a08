"""The labelling rubric (audit/rubric.py): its worked examples are the real rows they name, with those
rows' labels; every choice has a rule and the labelling tools' key; every boundary the labellers split on
has examples; the terminal rendering holds the whole rubric."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_guardbench.audit.rubric import (
    CUT,
    RUBRIC_VERSION,
    RUBRIC_FILE,
    RubricError,
    boundary_text,
    examples_of,
    field_text,
    load_rubric,
    rubric,
    rubric_text,
    rule_for,
)
from pytest_guardbench.commands.audit_tui import MODE_KEYS, SAFETY_KEYS
from pytest_guardbench.errors import InternalError
from pytest_guardbench.records import ANSWER_MODES
from pytest_guardbench.scoring.policies import assistant_policy_v2_label

FIELDS = rubric().fields
BOUNDARIES = rubric().boundaries
DATASETS = Path(__file__).resolve().parents[3] / "pytest_guardbench" / "datasets"
# Labelled by us for development; the two held-out sets, labelled blind by others, never give an example.
ALLOWED = {
    "judge_audit_smollm2_v1.jsonl",
    "judge_audit_smollm2_v3.jsonl",
    "judge_audit_smollm2_v4.jsonl",
    "judge_audit_smollm2_v5.jsonl",
    "judge_audit_smollm2_framing_v2.jsonl",
    "judge_audit_smollm2_roleplay_v1.jsonl",
    "judge_responses_smollm2_v2.jsonl",
    "judge_audit_smollm2_v6_dev.jsonl",
}
HELD_OUT = ("main_job_audit_v1.jsonl", "judge_audit_smollm2_v6_test.jsonl")
# The boundaries the rubric must settle with worked examples.
REQUIRED = {
    "cut_off_before_answer",
    "partial_or_wrong_answer",
    "misread_question",
    "off_topic",
    "refusal_of_unasked",
    "loop_after_answer",
    "brief_condemnation_vs_explanation",
    "jailbreak_frame_adopted",
    "poor_safety_advice",
    "indirect_vs_non_answer",
    "refused_vs_indirect",
    "harmful_request_answered_safely",
}


def _rows(name: str) -> dict[str, dict]:
    lines = (DATASETS / name).read_text(encoding="utf-8").splitlines()
    return {row["id"]: row for row in map(json.loads, lines)}


def _matches(shortened: str, original: str) -> bool:
    """`shortened` is `original` with zero or more spans replaced by CUT (and the blank space around them)."""
    pieces = [piece.strip() for piece in shortened.split(CUT)]
    if not shortened.startswith(CUT) and not original.startswith(pieces[0]):
        return False
    if not shortened.endswith(CUT) and not original.endswith(pieces[-1]):
        return False
    position = 0
    for piece in pieces:
        found = original.find(piece, position)
        if found < 0:
            return False
        position = found + len(piece)
    return True


def test_every_choice_has_a_one_line_rule_and_the_key_the_labelling_tools_use():
    safety, mode = FIELDS
    assert [c.value for c in safety.choices] == ["safe", "unsafe"]
    assert tuple(c.value for c in mode.choices) == ANSWER_MODES
    assert {c.key: c.value for c in safety.choices} == SAFETY_KEYS
    assert {c.key: c.value for c in mode.choices} == MODE_KEYS
    for field in FIELDS:
        for choice in field.choices:
            assert choice.rule and "\n" not in choice.rule
            assert rule_for(field.field, choice.value) == rule_for(field.field, choice.key) == choice.rule
        prefix = {"response_safety": "S", "answer_mode": "M"}[field.field]
        assert [r.id for r in field.rules] == [f"{prefix}{n}" for n in range(1, len(field.rules) + 1)]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: rule_for("helpfulness", "a"), "unknown field 'helpfulness'; known: response_safety, answer_mode"),
        (lambda: rule_for("answer_mode", "x"), "known: answered, refused_or_blocked, indirect, non_answer"),
        (lambda: examples_of(boundary="tone"), "unknown boundary 'tone'; known: cut_off_before_answer, "),
        (lambda: examples_of(choice="safe"), "examples of a choice need both its field and the choice"),
    ],
)
def test_an_unknown_name_is_refused_with_the_known_ones(call, message):
    with pytest.raises(RubricError, match=re.escape(message)):
        call()


def test_at_least_24_examples_each_from_a_development_dataset_row_used_once():
    found = examples_of()
    assert len(found) >= 24
    assert {e.dataset for e in found} <= ALLOWED
    assert len({(e.dataset, e.row_id) for e in found}) == len(found)


def test_every_example_is_the_row_it_names_with_that_rows_labels():
    rows = {name: _rows(name) for name in ALLOWED}
    for example in examples_of():
        row = rows[example.dataset][example.row_id]
        assert example.prompt == row["prompt"], example.row_id
        assert _matches(example.reply, row["response"]), example.row_id
        assert (CUT in example.reply) == (example.cut is not None), example.row_id
        assert (example.response_safety, example.answer_mode) == (row["human_label"], row["answer_mode"])
        policy = assistant_policy_v2_label(row["is_harmful"], example.response_safety, example.answer_mode)
        assert policy == row["assistant_policy_label"], example.row_id


def test_a_cut_reply_must_keep_the_text_around_the_cut():
    assert _matches(f"one two {CUT}", "one two three")
    assert _matches(f"one {CUT} three", "one two three")
    assert not _matches(f"one {CUT}", "zero one two")
    assert not _matches(f"two {CUT} one", "one two three")
    assert not _matches("one two", "one two three")


def test_no_example_shows_a_reply_of_the_held_out_sets():
    held = {row["response"].strip() for name in HELD_OUT for row in _rows(name).values()}
    rows = {name: _rows(name) for name in ALLOWED}
    assert not [e.row_id for e in examples_of() if rows[e.dataset][e.row_id]["response"].strip() in held]


def test_every_required_boundary_and_every_choice_has_examples_of():
    assert REQUIRED <= {b.name for b in BOUNDARIES}
    for boundary in BOUNDARIES:
        assert examples_of(boundary=boundary.name), boundary.name
        assert all(e.boundary == boundary.name for e in examples_of(boundary=boundary.name))
    for field in FIELDS:
        for choice in field.choices:
            shown = examples_of(field=field.field, choice=choice.key)
            assert shown and all(getattr(e, field.field) == choice.value for e in shown), choice.value


@pytest.mark.parametrize(
    ("boundary", "field", "sides"),
    [
        ("brief_condemnation_vs_explanation", "response_safety", {"safe", "unsafe"}),
        ("jailbreak_frame_adopted", "response_safety", {"safe", "unsafe"}),
        ("poor_safety_advice", "response_safety", {"safe", "unsafe"}),
        ("indirect_vs_non_answer", "answer_mode", {"indirect", "non_answer"}),
        ("refused_vs_indirect", "answer_mode", {"refused_or_blocked", "indirect", "answered"}),
        ("refused_vs_non_answer", "answer_mode", {"refused_or_blocked", "non_answer"}),
        ("cut_off_before_answer", "answer_mode", {"answered", "non_answer"}),
    ],
)
def test_a_boundary_between_labels_shows_each_side(boundary, field, sides):
    assert {getattr(e, field) for e in examples_of(boundary=boundary)} == sides


def test_every_why_is_short_and_names_the_rules_it_lists():
    rule_ids = {rule.id for field in FIELDS for rule in field.rules}
    for example in examples_of():
        assert example.rules and set(example.rules) <= rule_ids, example.row_id
        assert all(rule in example.why for rule in example.rules), example.row_id
        sentences = re.findall(r"[.!?](?=\s+[A-Z'(]|\s*$)", example.why)
        assert 1 <= len(sentences) <= 2, example.row_id


def test_the_terminal_text_holds_the_whole_rubric_within_its_width():
    text = rubric_text(width=80)
    flat = " ".join(text.split())
    assert f"version {RUBRIC_VERSION}" in flat
    for field in FIELDS:
        assert field.question in flat
        for choice in field.choices:
            assert f"{choice.key} {choice.name}" in flat and " ".join(choice.rule.split()) in flat
        for rule in field.rules:
            assert f"{rule.id} {rule.title}. {' '.join(rule.text.split())}" in flat
    for boundary in BOUNDARIES:
        assert f"{boundary.title}: {' '.join(boundary.line.split())}" in flat
    assert not any(e.row_id in text for e in examples_of())
    with_examples = rubric_text(width=80, with_examples=True)
    assert all(e.row_id in with_examples for e in examples_of())
    assert max(len(line) for line in with_examples.splitlines()) <= 80


def test_one_field_and_one_boundary_render_alone():
    mode = field_text("answer_mode")
    assert mode.startswith("Answer mode: ") and "Response safety" not in mode and "  n  no answer " in mode
    shown = boundary_text("misread_question", with_examples=True)
    assert all(e.row_id in shown for e in examples_of(boundary="misread_question"))
    assert "judge_audit_v4.control-09.original" not in shown


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda data: data.update(version="2020-01-01.1"), "rubric version 2020-01-01.1, but the code is of "),
        (lambda data: data["examples"][0].update(cuts="a misspelt key"), "the rubric cannot be read"),
        (lambda data: data["examples"][0].update(answer_mode="redirected"), "the rubric cannot be read"),
        (lambda data: data["boundaries"][0].update(name="tone"), "the rubric cannot be read"),
    ],
)
def test_a_broken_rubric_file_is_an_internal_error_naming_it(tmp_path, change, message):
    data = json.loads(RUBRIC_FILE.read_text(encoding="utf-8"))
    change(data)
    broken = tmp_path / "rubric.json"
    broken.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InternalError, match=re.escape(f"{broken}: {message}")):
        load_rubric(broken)
