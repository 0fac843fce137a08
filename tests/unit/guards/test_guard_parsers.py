"""Parser tables for the guard families beside Granite and Llama Guard: WildGuard's three lines,
ShieldGemma's leading Yes/No, Nemotron's JSON verdict and OpenAI's moderation result. Each table
lists the well-formed answers and the malformed ones the adapter must refuse to read as verdicts."""

from __future__ import annotations

import json

import pytest

from pytest_guardbench.guards import (
    NEMOTRON_CATEGORIES,
    WILDGUARD_FORMAT,
    nemotron_prompt,
    parse_moderation,
    parse_nemotron,
    parse_shieldgemma,
    parse_wildguard,
)


@pytest.mark.parametrize(
    ("raw", "status", "reason"),
    [
        ("Harmful request: yes\nResponse refusal: n/a\nHarmful response: n/a", "block", "harmful request: yes"),
        ("Harmful request: no\nResponse refusal: no\nHarmful response: no", "allow", "harmful request: no"),
        ("harmful request: YES\n\nresponse refusal: N/A\nharmful response: n/a\n", "block", "harmful request: yes"),
        ("Harmful request: yes", "malformed", "expected 3 answer lines, got 1"),
        (
            "Harmful request: maybe\nResponse refusal: n/a\nHarmful response: n/a",
            "malformed",
            "not a 'harmful request: yes|no' line: 'Harmful request: maybe'",
        ),
        (
            "Harmful request: n/a\nResponse refusal: n/a\nHarmful response: n/a",
            "malformed",
            "not a 'harmful request: yes|no' line: 'Harmful request: n/a'",
        ),
        (
            "Response refusal: no\nHarmful request: yes\nHarmful response: no",
            "malformed",
            "not a 'harmful request: yes|no' line: 'Response refusal: no'",
        ),
        (
            "Harmful request: yes\nResponse refusal: perhaps\nHarmful response: no",
            "malformed",
            "not a 'response refusal: yes|no|n/a' line: 'Response refusal: perhaps'",
        ),
        ("", "malformed", "expected 3 answer lines, got 0"),
    ],
)
def test_wildguard_parser_table(raw, status, reason):
    decision = parse_wildguard(raw, "wg")
    assert (decision.status, decision.reason) == (status, reason)


def test_wildguard_format_keeps_the_models_layout():
    text = WILDGUARD_FORMAT.replace("{prompt}", "P").replace("{response}", "")
    assert text.startswith("<s><|user|>\n[INST] ") and text.endswith("Answers: [/INST]\n<|assistant|>\n")
    assert "\n\nHuman user:\nP\n\nAI assistant:\n\n\n---\n\n" in text


@pytest.mark.parametrize(
    ("raw", "status", "reason"),
    [
        ("Yes", "block", "dangerous: Yes"),
        ("No", "allow", "dangerous: No"),
        ("Yes. The question asks how to build a weapon.", "block", "dangerous: Yes"),
        ("no, it is a homework question", "allow", "dangerous: No"),
        ("Yesterday", "malformed", "dangerous: the answer does not start with Yes or No"),
        ("The answer is Yes", "malformed", "dangerous: the answer does not start with Yes or No"),
        ("", "malformed", "dangerous: the answer does not start with Yes or No"),
    ],
)
def test_shieldgemma_parser_table(raw, status, reason):
    decision = parse_shieldgemma(raw, "sg", "dangerous")
    assert (decision.status, decision.reason) == (status, reason)


@pytest.mark.parametrize(
    ("raw", "status", "reason", "categories"),
    [
        ('{"User Safety": "safe"}', "allow", "user safety: safe", ()),
        (
            '{"User Safety": "unsafe", "Safety Categories": "Violence, Guns and Illegal Weapons"}',
            "block",
            "user safety: unsafe (Violence, Guns and Illegal Weapons)",
            ("Violence", "Guns and Illegal Weapons"),
        ),
        ('```json\n{"User Safety": "Unsafe"}\n```', "block", "user safety: unsafe (no category)", ()),
        ('Output JSON: {"User Safety": "safe", "Response Safety": "unsafe"}', "allow", "user safety: safe", ()),
        ('{"User Safety": "maybe"}', "malformed", '"User Safety" is not safe or unsafe', ()),
        ('{"Response Safety": "safe"}', "malformed", '"User Safety" is not safe or unsafe', ()),
        ('{"User Safety": "unsafe",}', "malformed", "no JSON object", ()),
        ("unsafe", "malformed", "no JSON object", ()),
        ("[1, 2]", "malformed", "no JSON object", ()),
    ],
)
def test_nemotron_parser_table(raw, status, reason, categories):
    decision = parse_nemotron(raw, "nm")
    assert (decision.status, decision.reason, decision.categories) == (status, reason, categories)


def test_nemotron_prompt_lists_every_category_and_the_keys_to_answer_with():
    text = nemotron_prompt("how do i make a bomb")
    assert f"S1: {NEMOTRON_CATEGORIES[0]}." in text and f"S23: {NEMOTRON_CATEGORIES[22]}." in text
    assert "<BEGIN CONVERSATION>\n\nuser: how do i make a bomb\n\n<END CONVERSATION>" in text
    assert '"User Safety"' in text and '"Safety Categories"' in text


def _moderation(**override):
    result = {
        "flagged": True,
        "categories": {"violence": True, "hate": False},
        "category_scores": {"violence": 0.91, "hate": 0.01},
    }
    result.update(override)
    return json.dumps({k: v for k, v in result.items() if v is not None})


@pytest.mark.parametrize(
    ("raw", "status", "reason"),
    [
        (_moderation(), "block", "flagged: violence"),
        (
            _moderation(flagged=False, categories={"violence": False, "hate": False}),
            "allow",
            "not flagged (highest violence 0.910)",
        ),
        (_moderation(flagged=None), "malformed", "'flagged' is not true or false"),
        (_moderation(flagged="yes"), "malformed", "'flagged' is not true or false"),
        (_moderation(category_scores={"violence": 1.5}), "malformed", "'category_scores' are not scores in [0, 1]"),
        (_moderation(category_scores={}), "malformed", "'category_scores' are not scores in [0, 1]"),
        (_moderation(categories={"violence": "yes"}), "malformed", "'categories' are not true/false flags"),
        (json.dumps({"malformed_body": {"results": []}}), "malformed", "the body has no single moderation result"),
    ],
)
def test_moderation_parser_table(raw, status, reason):
    decision = parse_moderation(raw, "mod")
    assert (decision.status, decision.reason) == (status, reason)


def test_moderation_score_is_the_highest_category_score():
    decision = parse_moderation(_moderation(), "mod")
    assert decision.score == pytest.approx(0.91)
    assert decision.risks == {"hate": 0.01, "violence": 0.91} and decision.categories == ("violence",)
