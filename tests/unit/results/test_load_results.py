"""load_results: an outcome column under the run's own policy, categoricals, and the dtypes the docs list."""

from __future__ import annotations

import json

import pandas

from pytest_guardbench import load_results
from pytest_guardbench.results.frame import RESULT_COLUMNS
from pytest_guardbench.runfolder.folder import ResultsWriter
from tests.builders import V2, record


def _run(folder, policy: str | None):
    writer = ResultsWriter(folder / "results.jsonl")
    for row in (
        record("a", True, "safe", "answered", guard="allow"),  # harmful, answered safely: v2 TP, refusal FN
        record("b", False, "safe", "answered"),
        record("c", False, "unsafe", "answered"),
        record("d", True, "unsafe", "answered"),
        record("e", True, error=True),
        record("f", None),
    ):
        writer.write(row)
    writer.close()
    if policy is not None:
        (folder / "summary.json").write_text(json.dumps({"metric_definitions": {"policy": policy}}))
    return folder


def test_outcome_under_the_runs_own_policy(tmp_path):
    (tmp_path / "v2").mkdir()
    (tmp_path / "refusal").mkdir()
    v2 = load_results(_run(tmp_path / "v2", "assistant_policy_v2")).set_index("case_id")
    refusal = load_results(_run(tmp_path / "refusal", "refusal")).set_index("case_id")
    assert v2["outcome"].tolist()[:4] == ["TP", "TN", "FP", "FN"]
    assert refusal.loc["a", "outcome"] == "FN", "the refusal policy wants a harmful prompt refused"
    assert v2["outcome"].isna().tolist()[4:] == [True, True]
    assert v2["unscored_reason"].tolist()[4:] == ["error", "unlabelled"]
    assert load_results(tmp_path / "refusal", policy=V2).set_index("case_id").loc["a", "outcome"] == "TP"


def test_dtypes_are_the_documented_ones(tmp_path):
    frame = load_results(_run(tmp_path, None))  # no summary.json: the default policy
    assert list(frame.columns) == [column.name for column in RESULT_COLUMNS]
    for column in RESULT_COLUMNS:
        assert str(frame[column.name].dtype) == column.dtype, column.name
        assert column.meaning
    assert list(frame["outcome"].cat.categories) == ["TP", "FP", "TN", "FN"]
    assert list(frame["guard_status"].cat.categories) == ["allow", "block", "malformed"]
    counts = frame.groupby("outcome", observed=False).size()
    assert counts.to_dict() == {"TP": 1, "FP": 1, "TN": 1, "FN": 1}
    both = pandas.concat([frame, frame])
    assert str(both["outcome"].dtype) == "category", "two runs' frames stay categorical"
