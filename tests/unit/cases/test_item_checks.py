"""What a JSON or CSV parser lets through and a run cannot use: a lone UTF-16 surrogate, a prompt or
turn with nothing visible, a file named twice, a misspelt shipped name, a CSV field past the csv
module's limit, JSON nested past the stack; and conversation labels that contradict themselves (a warning, not an error)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_guardbench.cases.item_checks import has_visible_text, lone_surrogate_at
from pytest_guardbench.cases.sources import label_conflict_warning, load_judge_labels, load_sources
from pytest_guardbench.errors import DataError

CATEGORIES = ("danger",)


def _pack(tmp_path: Path, *items: dict, name: str = "pack.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"name": "p", "items": list(items)}), encoding="utf-8")  # "\ud800" stays an escape
    return path


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (
            {"id": "a", "turns": ["hi", {"role": "user", "content": "half \ud83d"}]},
            r"item 0: turns\[1\]\.content \(U\+D83D\) is a lone UTF-16 surrogate",
        ),
        ({"id": "a", "prompt_text": "\udfff"}, r"item 0: prompt_text \(U\+DFFF\) is a lone UTF-16 surrogate"),
        (
            {"id": "a", "prompt_text": "ok", "metadata": {"note": ["x", "\ud800"]}},
            r"item 0: metadata\.note\[1\] \(U\+D800\)",
        ),
        ({"id": "a\ud800", "prompt_text": "ok"}, r"item 0: id \(U\+D800\)"),
        ({"id": "a", "prompt_text": "ok", "metadata": {"k\ud800": 1}}, r"item 0: metadata\.<key> \(U\+D800\)"),
    ],
    ids=["turn", "prompt", "metadata", "id", "key"],
)
def test_a_lone_surrogate_anywhere_in_an_item_is_named(tmp_path, item, message):
    with pytest.raises(DataError, match=message):
        load_sources([_pack(tmp_path, item)], CATEGORIES)


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"id": "a", "prompt_text": "\u200b\u200d\ufeff"}, r"\(id 'a'\): prompt_text has no visible character"),
        ({"id": "a", "turns": ["hello", "\u200b \u2060"]}, r"turn 1: content has no visible character"),
        ({"id": "a", "prompt_text": "\u0301\u0302"}, r"prompt_text has no visible character"),
    ],
    ids=["zero-width-prompt", "zero-width-turn", "marks-alone"],
)
def test_a_text_with_nothing_visible_is_not_content(tmp_path, item, message):
    with pytest.raises(DataError, match=message):
        load_sources([_pack(tmp_path, item)], CATEGORIES)


def test_visible_text_counts_scripts_and_emoji():
    assert all(has_visible_text(t) for t in ("a", "\u200bé", "שלום", "🙂", "e\u0301", "٣"))
    assert not any(has_visible_text(t) for t in ("", " \t\n", "\u200b", "\u2028", "\x00", "\u0301"))
    assert lone_surrogate_at({"a": ["ok", {"b": "x\udc00"}]}) == "a[1].b (U+DC00)"


def test_the_same_file_given_twice_is_named_not_blamed_on_variants(tmp_path):
    path = _pack(tmp_path, {"id": "a", "prompt_text": "hi"})
    with pytest.raises(DataError, match=r"pack\.json: given twice \(also as .*pack\.json\); name each data file once"):
        load_sources([path, tmp_path / "." / "pack.json"], CATEGORIES)


def test_a_misspelt_shipped_name_is_no_file_and_gets_a_suggestion(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        DataError,
        match=r"^child_safty_v1: no such file, nor a shipped pack or dataset of that name; did you mean child_safety_v1\?",
    ):
        load_sources([Path("child_safty_v1")], CATEGORIES)


def test_a_csv_field_past_the_size_limit_names_its_line(tmp_path):
    path = tmp_path / "mb.csv"
    path.write_text(
        'PromptID,Prompt,Category,Subcategory\n1,hi,Danger,\n2,"' + "x" * 200_000 + '",Danger,\n', encoding="utf-8"
    )
    with pytest.raises(DataError, match=r"mb\.csv: line \d+: not a CSV row"):
        load_sources([path], CATEGORIES)


def test_json_nested_past_the_stack_is_a_data_error(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"name": "p", "items": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    with pytest.raises(DataError, match=r"deep\.json: not valid JSON \(RecursionError"):
        load_sources([path], CATEGORIES)


def test_variant_tags_that_are_not_a_list_are_ignored_and_a_bad_base_id_is_named(tmp_path):
    [item] = load_sources(
        [_pack(tmp_path, {"id": "a", "prompt_text": "hi", "metadata": {"variant_tags": 5}})], CATEGORIES
    ).items
    assert item.variant == "original"
    with pytest.raises(DataError, match=r"metadata\.base_prompt_id '!!!' has no usable characters"):
        load_sources(
            [_pack(tmp_path, {"id": "a", "prompt_text": "hi", "metadata": {"base_prompt_id": "!!!"}})], CATEGORIES
        )


@pytest.mark.parametrize(
    ("label", "turns", "said"),
    [
        (
            False,
            [{"role": "user", "content": "how do i hurt someone", "is_harmful": True}, "thanks"],
            "a safe conversation whose turn 0 is labelled harmful",
        ),
        (
            True,
            [
                {"role": "user", "content": "hi", "is_harmful": False},
                {"role": "user", "content": "bye", "is_harmful": False},
            ],
            "a harmful conversation whose every user turn is labelled safe",
        ),
    ],
    ids=["safe-with-harmful-turn", "harmful-with-only-safe-turns"],
)
def test_conversation_labels_that_contradict_each_other_are_warned_about(tmp_path, label, turns, said):
    items = load_sources(
        [_pack(tmp_path, {"id": "c", "turns": turns, "metadata": {"is_harmful": label}})], CATEGORIES
    ).items
    warning = label_conflict_warning(items)
    assert warning is not None and "1 conversations have turn labels that contradict their own label" in warning
    assert f"p/c ({tmp_path / 'pack.json'}: item 0): {said}" in warning


def test_conversations_whose_labels_agree_are_not_warned_about(tmp_path):
    turns = [
        {"role": "user", "content": "hi", "is_harmful": False},
        {"role": "user", "content": "how do i hurt someone"},
    ]
    items = load_sources(
        [_pack(tmp_path, {"id": "c", "turns": turns, "metadata": {"is_harmful": True}})], CATEGORIES
    ).items
    assert label_conflict_warning(items) is None


def test_a_judge_labels_file_that_is_not_utf8_or_holds_a_surrogate_is_named(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_bytes(b'{"id": "a", "prompt": "q", "response": "caf\xe9", "human_label": "safe"}\n')
    with pytest.raises(DataError, match=r"labels\.jsonl: not UTF-8 text \(byte 43\)"):
        load_judge_labels(path)
    path.write_text('{"id": "a", "prompt": "q", "response": "\\ud800", "human_label": "safe"}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"labels\.jsonl: line 1: response \(U\+D800\) is a lone UTF-16 surrogate"):
        load_judge_labels(path)
