"""Loaders for JSON packs, JSONL datasets and MinorBench CSV; label resolution; manifest."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from pytest_guardbench.settings.config import MINORBENCH_HARMFUL_CATEGORIES
from pytest_guardbench.cases.sources import DataError, load_sources, manifest, resolve_label
from pytest_guardbench.cases.variants import expand

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ({"is_harmful": True, "label": "safe"}, (True, "is_harmful")),
        ({"is_harmful": False, "category": "Hateful"}, (False, "is_harmful")),
        ({"label": "UNSAFE"}, (True, "label")),
        ({"label": "safe", "category": "Hateful"}, (False, "label")),
        ({"category": "Hateful"}, (True, "category_rule")),
        ({"original_category": "substance use"}, (True, "category_rule")),
        ({"category": "Weather"}, (None, "unlabelled")),
        ({}, (None, "unlabelled")),
    ],
)
def test_label_resolution_first_hit_wins(metadata, expected):
    assert resolve_label(metadata, MINORBENCH_HARMFUL_CATEGORIES) == expected


def test_three_formats_load_into_one_item_list(tmp_path):
    (tmp_path / "pack.json").write_text(
        json.dumps(
            {
                "name": "My Pack",
                "items": [
                    {
                        "id": "A 1",
                        "prompt": "hi",
                        "metadata": {"label": "safe", "variant": "typo", "base_prompt_id": "A0"},
                    }
                ],
            }
        )
    )
    (tmp_path / "extra.jsonl").write_text(
        json.dumps({"id": 7, "prompt_text": "yo", "metadata": {"variant_tags": ["variant:camouflage"]}}) + "\n\n"
    )
    (tmp_path / "mb.csv").write_text(
        "PromptID,Prompt,Category,Subcategory\n1,how do i swear,Profanities,words\n2,what is rain,Weather,\n"
    )
    data = load_sources(
        [tmp_path / "pack.json", tmp_path / "extra.jsonl", tmp_path / "mb.csv"], MINORBENCH_HARMFUL_CATEGORIES
    )
    first, jsonl, csv1, csv2 = data.items
    assert (first.pack, first.item_id, first.variant, first.base_prompt_id, first.is_harmful) == (
        "my-pack",
        "a-1",
        "typo",
        "a0",
        False,
    )
    assert (jsonl.pack, jsonl.item_id, jsonl.variant, jsonl.label_source, jsonl.location) == (
        "extra",
        "7",
        "camouflage",
        "unlabelled",
        "line 1",
    )
    assert (csv1.item_id, csv1.category, csv1.is_harmful, csv1.label_source, csv1.location) == (
        "1",
        "Profanities",
        True,
        "category_rule",
        "line 2",
    )
    assert (csv2.is_harmful, csv2.label_source) == (None, "unlabelled")
    assert [s.format for s in data.sources] == ["json", "jsonl", "csv"]
    assert data.sources[2].sha256 == hashlib.sha256((tmp_path / "mb.csv").read_bytes()).hexdigest()


def test_same_pack_name_in_two_files_with_clashing_ids(tmp_path):
    for name in ("a.json", "b.json"):
        (tmp_path / name).write_text(
            json.dumps({"name": "same", "items": [{"id": "x", "prompt": "hi", "metadata": {}}]})
        )
    with pytest.raises(DataError, match=r"b\.json: item 0: duplicate id 'x' in pack 'same'"):
        load_sources([tmp_path / "a.json", tmp_path / "b.json"], ())


def test_shipped_pack_meets_its_brief():
    data = load_sources([REPO / "pytest_guardbench" / "packs" / "child_safety_v1.json"], ())
    harmful = [i for i in data.items if i.is_harmful]
    controls = [i for i in data.items if i.is_harmful is False]
    assert len(harmful) >= 60 and len(controls) >= 30
    assert {i.category for i in harmful} == {"Danger", "Sexual", "Profanities", "Hateful", "Self-harm", "Substance use"}
    assert all(i.label_source == "is_harmful" for i in data.items), "every shipped item is labelled explicitly"
    cases = expand(list(data.items), ("original", "typo", "camouflage", "adversarial"))
    per_variant_labels = {(c.variant, c.is_harmful) for c in cases}
    assert per_variant_labels == {
        (v, h) for v in ("original", "typo", "camouflage", "adversarial") for h in (True, False)
    }
    doc = manifest(data, cases)
    assert doc["cases"] == len(data.items) * 4
    assert doc["label_states"] == {"harmful": len(harmful) * 4, "safe": len(controls) * 4, "unlabelled": 0}
