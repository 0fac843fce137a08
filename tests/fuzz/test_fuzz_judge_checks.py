"""Stored judge checks (`.guardbench/judge_checks/<key>.json`) cut short, emptied, edited or replaced:
a file that is not a whole result is ignored, measured again and replaced by a whole one; a whole one
is reused without a call to the judge. `run.judge_quality.stored_check` is what every run calls."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from pytest_guardbench.cases.sources import load_judge_labels
from pytest_guardbench.judges.rules import RulesJudge
from pytest_guardbench.run.judge_quality import _is_result, measured_quality, stored_check
from tests.fuzz.conftest import fuzz

LABELS = Path(__file__).resolve().parents[2] / "pytest_guardbench" / "datasets" / "judge_labels_v1.jsonl"
KEY = "0" * 64


def _now() -> str:
    return "2026-01-01T00:00:00+00:00"


@pytest.fixture(scope="module")
def whole() -> bytes:
    """A stored check as a run writes it."""
    labels = load_judge_labels(LABELS)
    with tempfile.TemporaryDirectory() as folder:
        stored_check(Path(folder), KEY, lambda: measured_quality(RulesJudge(), labels, 0.6), _now)
        return (Path(folder) / f"{KEY}.json").read_bytes()


@st.composite
def damaged(draw: st.DrawFn, whole: bytes) -> bytes | None:
    """The stored file after something happened to it; None: a folder stands where the file was."""
    how = draw(
        st.sampled_from(
            ["whole", "whole", "cut", "cut", "byte", "empty", "edit", "edit", "other-json", "binary", "folder"]
        )
    )
    event(how)
    if how == "whole":
        return whole
    if how == "cut":
        return whole[: draw(st.integers(0, len(whole) - 1))]
    if how == "byte":
        at = draw(st.integers(0, len(whole) - 1))
        return whole[:at] + bytes([draw(st.integers(0, 255))]) + whole[at + 1 :]
    if how == "empty":
        return b""
    if how == "edit":
        document = json.loads(whole)
        key = draw(st.sampled_from(sorted(document)))
        value = draw(st.one_of(st.none(), st.text(max_size=5), st.integers(), st.just([]), st.just({})))
        document.pop(key) if draw(st.booleans()) else document.__setitem__(key, value)
        return json.dumps(document).encode()
    if how == "other-json":
        return json.dumps(
            draw(st.one_of(st.lists(st.integers()), st.dictionaries(st.text(max_size=3), st.integers())))
        ).encode()
    if how == "binary":
        return draw(st.binary(max_size=64))
    return None


@fuzz(examples=80)
@given(st.data())
def test_a_stored_check_is_reused_whole_or_measured_again_and_replaced(whole, data):
    stored = data.draw(damaged(whole))
    calls = []
    fresh = json.loads(whole)
    fresh.pop("stored_check")

    def compute() -> dict:
        calls.append(1)
        return dict(fresh)

    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder)
        path = store / f"{KEY}.json"
        if stored is None:
            path.mkdir()
        else:
            path.write_bytes(stored)
        still_whole = stored is not None and _whole(stored)
        result, reused = stored_check(store, KEY, compute, _now)
        assert reused == still_whole and len(calls) == (0 if still_whole else 1)
        assert _is_result(result) or not reused
        if stored is not None:
            # Healed: the file is a whole result again, which the next run reuses without a call.
            assert _is_result(json.loads(path.read_text(encoding="utf-8")))
            again, reused_again = stored_check(store, KEY, compute, _now)
            assert reused_again and again == result and len(calls) == (0 if still_whole else 1)
        if stored is not None:
            # (Where a folder stands in the file's place, run/judge_quality.py leaves its .tmp behind:
            # reported, not ours to fix.)
            assert not [p for p in store.iterdir() if p.name.endswith(".tmp")], "a partial file was left behind"


def _whole(data: bytes) -> bool:
    try:
        return _is_result(json.loads(data.decode("utf-8")))
    except ValueError:
        return False
