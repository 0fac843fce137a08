"""Shipped packs and datasets are package data, found by name when no file of that name exists."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_guardbench._util.package_data import DATASETS, PACKAGE_ROOT, PACKS, shipped_file, shipped_names
from pytest_guardbench.cases.sources import load_judge_labels, load_sources
from pytest_guardbench.settings.config import Settings
from pytest_guardbench.settings.options import ConfigError


def _settings(tmp_path: Path, **values: object) -> Settings:
    return Settings.build(dict(values), {name: "cli" for name in values}, root=tmp_path, invocation_dir=tmp_path)


def test_the_shipped_pack_and_datasets_are_listed_by_name():
    assert shipped_names(PACKS) == ["child_safety_conversations_v1", "child_safety_v1"]
    assert {"guard_prompts_v1", "judge_audit_smollm2_v5", "judge_labels_v1"} <= set(shipped_names(DATASETS))
    # A few MB at most: the wheel carries all of them.
    size = sum(p.stat().st_size for folder in (PACKS, DATASETS) for p in (PACKAGE_ROOT / folder).iterdir())
    assert size < 3_000_000


@pytest.mark.parametrize("name", ["child_safety_v1", "child_safety_v1.json"])
def test_a_pack_name_resolves_to_the_shipped_file(tmp_path, name):
    settings = _settings(tmp_path, data=[name])
    assert settings.data == (PACKAGE_ROOT / "packs" / "child_safety_v1.json",)
    loaded = load_sources(settings.data, ())
    assert len(loaded.items) == 99 and loaded.items[0].pack == "child_safety"


def test_a_dataset_name_resolves_for_data_and_judge_check(tmp_path):
    settings = _settings(tmp_path, data=["guard_prompts_v1"], judge_check="judge_audit_smollm2_v5")
    assert settings.data == (PACKAGE_ROOT / "datasets" / "guard_prompts_v1.jsonl",)
    assert settings.judge_check == PACKAGE_ROOT / "datasets" / "judge_audit_smollm2_v5.jsonl"
    assert len(load_judge_labels(settings.judge_check)) == 108


def test_a_file_of_that_name_wins_over_the_shipped_one(tmp_path):
    (tmp_path / "child_safety_v1").write_text("{}")
    assert _settings(tmp_path, data=["child_safety_v1"]).data == (tmp_path / "child_safety_v1",)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (
            {"data": ["child_safety_v2"]},
            "--guardbench-data: 'child_safety_v2' is neither a file nor a shipped name "
            "(packs: child_safety_conversations_v1, child_safety_v1; datasets: guard_prompts_v1, ",
        ),
        (
            {"judge_check": "judge_audit_v9"},
            "--guardbench-judge-check: 'judge_audit_v9' is neither a file nor a "
            "shipped name (datasets: guard_prompts_v1, ",
        ),
    ],
)
def test_an_unknown_name_lists_the_shipped_names(tmp_path, values, expected):
    with pytest.raises(ConfigError) as raised:
        _settings(tmp_path, **values)
    assert str(raised.value).startswith(expected)


def test_a_missing_path_stays_a_path_for_its_loader_to_report(tmp_path):
    assert _settings(tmp_path, data=["nope.json"]).data == (tmp_path / "nope.json",)
    assert _settings(tmp_path, data=["sub/child_safety_v1"]).data == (tmp_path / "sub" / "child_safety_v1",)
    assert shipped_file("nope", (PACKS, DATASETS)) is None
