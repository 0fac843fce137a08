"""A stored judge check that is not a whole result (emptied, cut short, edited) is measured again,
replaced, and said so once; a missing one is simply measured."""

from __future__ import annotations

import json

from pytest_guardbench.run.judge_quality import stored_check


def _measured() -> dict[str, object]:
    return {"cohen_kappa": 0.8, "low_confidence": False, "rows": 3, "agreement": 1.0}


def test_a_corrupt_stored_check_is_measured_again_and_said_once(tmp_path):
    (tmp_path / "key.json").write_text("{}")
    told: list[str] = []
    result, reused = stored_check(tmp_path, "key", _measured, lambda: "now", lambda path: told.append(str(path)))
    assert not reused and result["cohen_kappa"] == 0.8 and told == [str(tmp_path / "key.json")]
    assert json.loads((tmp_path / "key.json").read_text())["stored_check"]["computed_at"] == "now"
    again, reused_again = stored_check(tmp_path, "key", _measured, lambda: "later", lambda path: told.append(str(path)))
    assert reused_again and again == result and len(told) == 1


def test_a_missing_stored_check_is_measured_without_a_word(tmp_path):
    told: list[str] = []
    _, reused = stored_check(tmp_path, "key", _measured, lambda: "now", told.append)
    assert not reused and told == []
