"""Sharded runs merge into exactly the unsharded scorecard."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_guardbench.commands.main import main
from pytest_guardbench.cases.variants import in_shard
from tests.builders import case
from tests.conftest import write_project

# The rules judge checked against human labels on every shard: the merge must carry that check over.
LABELS = Path(__file__).resolve().parents[2] / "pytest_guardbench" / "datasets" / "judge_labels_v1.jsonl"
LENIENT = ("--guardbench-min-recall=0.5", "--guardbench-max-fpr=0.5", f"--guardbench-judge-check={LABELS}")
COMPARED = (
    "scorecards",
    "per_variant",
    "per_family",
    "per_category",
    "prompt_row_buckets",
    "guard_decisions",
    "flip_rates",
    "outcomes",
    "coverage",
    "warnings",
    "judge_quality",
    "confidence",
)


def test_every_case_is_in_exactly_one_shard():
    cases = [case(f"c{n}", True).model_copy(update={"base_prompt_id": f"b{n % 7}"}) for n in range(50)]
    for total in (1, 2, 3, 5):
        owners = [[i for i in range(1, total + 1) if in_shard(c, (i, total))] for c in cases]
        assert all(len(o) == 1 for o in owners)
    same_base = [c for c in cases if c.base_prompt_id == "b3"]
    assert len({next(i for i in (1, 2, 3) if in_shard(c, (i, 3))) for c in same_base}) == 1


def test_shards_merge_into_the_unsharded_run(pytester):
    write_project(pytester, ini="guardbench_variants = original,typo\n")
    reports = pytester.path / "reports"
    assert pytester.runpytest_subprocess(*LENIENT).ret == 0
    [whole] = list(reports.iterdir())
    shard_dirs = []
    for index in (1, 2):
        result = pytester.runpytest_subprocess(f"--guardbench-shard={index}/2", *LENIENT)
        assert result.ret in (0, 1), result.stdout.str()  # a shard alone may miss a threshold
        [new] = [d for d in reports.iterdir() if d != whole and d not in shard_dirs]
        shard_dirs.append(new)
    sizes = [json.loads((d / "summary.json").read_text())["coverage"]["expected"] for d in shard_dirs]
    assert sum(sizes) == 12 and all(sizes)
    merged = pytester.path / "merged"
    assert main(["merge", *map(str, shard_dirs), "--out", str(merged)]) == 0
    expected = json.loads((whole / "summary.json").read_text())
    got = json.loads((merged / "summary.json").read_text())
    assert expected["judge_quality"] and expected["confidence"]
    for key in COMPARED:
        assert got[key] == expected[key], key
    assert got["gate"]["verdict"] == expected["gate"]["verdict"] == "passed"
    assert got["selection"]["merged_shards"] == ["1/2", "2/2"]

    assert main(["merge", str(shard_dirs[0]), str(shard_dirs[0]), "--out", str(pytester.path / "overlap")]) == 4
    assert main(["merge", str(shard_dirs[0]), str(whole), "--out", str(pytester.path / "mixed")]) == 4


def test_incompatible_runs_are_refused(pytester, capsys):
    write_project(pytester)
    reports = pytester.path / "reports"
    pytester.runpytest_subprocess("--guardbench-shard=1/2", *LENIENT)
    [first] = list(reports.iterdir())
    pytester.runpytest_subprocess("--guardbench-shard=2/2", "--guardbench-max-new-tokens=9", *LENIENT)
    [second] = [d for d in reports.iterdir() if d != first]
    assert main(["merge", str(first), str(second), "--out", str(pytester.path / "m")]) == 4
    assert "stack.max_new_tokens is 9" in capsys.readouterr().err


def test_a_live_run_its_merge_and_its_rejudge_with_the_same_judge_give_the_same_summary(pytester):
    from pytest_guardbench.document.read import load_run

    write_project(pytester, ini="guardbench_variants = original,typo\n")
    assert pytester.runpytest_subprocess(*LENIENT).ret == 0
    [live_dir] = list((pytester.path / "reports").iterdir())
    merged_dir = pytester.path / "merged"
    assert main(["merge", str(live_dir), "--out", str(merged_dir)]) == 0
    assert main(["rejudge", str(live_dir), "--judge", "rules"]) == 0
    [rejudged_dir] = [p for p in live_dir.iterdir() if p.is_dir()]
    live, merged, rejudged = (load_run(d) for d in (live_dir, merged_dir, rejudged_dir))
    for key in (*COMPARED, "completeness", "metric_definitions", "thresholds", "flip_rates"):
        assert getattr(merged, key) == getattr(live, key) == getattr(rejudged, key), key
    assert (
        [c.message for c in merged.gate.checks]
        == [c.message for c in live.gate.checks]
        == [c.message for c in rejudged.gate.checks]
    )
