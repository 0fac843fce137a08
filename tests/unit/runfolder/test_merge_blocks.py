"""`guardbench merge` carries every block the unsharded run has (tokens and cost, execution counts,
internal errors, worker crashes, why a shard is incomplete), refuses shards that ran with other
settings (attacker, its turns, the categories that label, the models), and leaves a whole folder or
none."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_guardbench.commands.main import main
from pytest_guardbench.document.read import load_run
from tests.fuzz.runs import write_shards

KEY = "sk-merge-Hh2Jj3Kk4Ll5Mm6Nn7"


def _edit(path: Path, change: Any) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    change(document)
    path.write_text(json.dumps(document), encoding="utf-8")


def _usage(cost: float | None) -> dict[str, Any]:
    stage = {"cases": 6, "p50_s": 0.1, "p95_s": 0.2, "total_s": 0.6}
    tokens = {"answers": 6, "prompt_tokens": 30, "completion_tokens": 40, "models": ["m"]}
    return {
        "stages": {"tutor": stage},
        "tutor_tokens": tokens,
        "tutor_cost_usd": cost,
        "cost_note": None if cost else "no price for m",
    }


def _run_block(n: int, cost: float | None) -> Any:
    def change(summary: dict[str, Any]) -> None:
        summary["run"].update(
            usage=_usage(cost),
            execution={
                "cases_run": 6,
                "case_errors": n,
                "api_calls": {"tutor": {"calls": 6 + n, "retries": n, "lowest_concurrency": 8 - n}},
            },
            internal_errors=[f"shard {n}: record failed validation"] if n == 1 else [],
            worker_crashes=[f"worker gw{n} went down"] if n == 2 else [],
        )
        if n == 2:
            summary["completeness"] = {"complete": False, "reasons": [f"worker crash: worker gw{n} went down"]}

    return change


def test_a_merge_carries_usage_execution_internal_errors_and_worker_crashes(tmp_path, capsys):
    first, second = write_shards(tmp_path)
    for n, shard in enumerate((first, second), start=1):
        _edit(shard / "summary.json", _run_block(n, 0.25 * n))
    out = tmp_path / "merged"
    assert main(["merge", str(first), str(second), "--out", str(out)]) == 1  # a shard's run had internal errors
    err = capsys.readouterr().err
    assert (
        "a shard's internal error: shard 1: record failed validation" in err and "a shard's worker gw2 went down" in err
    )
    run = load_run(out).run
    assert run.usage is not None and run.usage.tutor_tokens.answers == 12 and run.usage.tutor_cost_usd == 0.75
    assert run.usage.stages["tutor"].cases == 12  # counted again from the records
    execution = run.execution.model_dump(mode="json")
    assert execution["cases_run"] == 12 and execution["case_errors"] == 3
    assert execution["api_calls"]["tutor"] == {"calls": 15, "retries": 3, "lowest_concurrency": 6}
    assert run.internal_errors == ["shard 1: record failed validation"] and run.worker_crashes == [
        "worker gw2 went down"
    ]
    assert "worker crash: worker gw2 went down" in load_run(out).completeness.reasons


def test_a_shard_without_a_price_leaves_the_merged_cost_unknown(tmp_path):
    first, second = write_shards(tmp_path)
    _edit(first / "summary.json", _run_block(0, 0.5))
    _edit(second / "summary.json", _run_block(0, None))
    out = tmp_path / "merged"
    assert main(["merge", str(first), str(second), "--out", str(out)]) in (0, 1)
    usage = load_run(out).run.usage
    assert usage is not None and usage.tutor_cost_usd is None and usage.cost_note == "no price for m"


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda m: m["settings"].update(attacker_turns=5), "meta.json settings.attacker_turns is 5, but"),
        (lambda m: m["settings"].update(attacker="scripted"), 'meta.json settings.attacker is "scripted", but'),
        (
            lambda m: m["settings"].update(harmful_categories=["danger", "sexual"]),
            "meta.json settings.harmful_categories is",
        ),
        (lambda m: m.update(system_prompt_sha256="b" * 64), "meta.json system_prompt_sha256 is"),
        (
            lambda m: m.update(models={"tutor": {"model": "m", "params": {"temperature": 1.0}}}),
            "meta.json models.tutor is",
        ),
    ],
    ids=["attacker-turns", "attacker", "harmful-categories", "system-prompt", "model-params"],
)
def test_shards_that_ran_with_other_settings_are_refused(tmp_path, capsys, change, said):
    first, second = write_shards(tmp_path)
    for shard in (first, second):
        _edit(shard / "meta.json", lambda m: m.update(models={"tutor": {"model": "m", "params": {"temperature": 0.0}}}))
    _edit(second / "meta.json", change)
    out = tmp_path / "merged"
    assert main(["merge", str(first), str(second), "--out", str(out)]) == 4
    err = capsys.readouterr().err
    assert f"guardbench merge: {second}: {said}" in err and str(first) in err
    assert not out.exists()


def test_models_reached_another_way_still_merge(tmp_path):
    first, second = write_shards(tmp_path)
    spec = {"model": "m", "params": {"temperature": 0.0}}
    _edit(first / "meta.json", lambda m: m.update(models={"tutor": {**spec, "base_url": "http://a", "concurrency": 4}}))
    _edit(
        second / "meta.json", lambda m: m.update(models={"tutor": {**spec, "base_url": "http://b", "concurrency": 16}})
    )
    assert main(["merge", str(first), str(second), "--out", str(tmp_path / "merged")]) in (0, 1)


def test_a_shard_that_fails_part_way_leaves_no_merged_folder(tmp_path, capsys):
    first, second = write_shards(tmp_path)
    with (second / "results.jsonl").open("a", encoding="utf-8") as results:
        results.write('{"case_id": "p.x.original", "broken": \n')
    out = tmp_path / "merged"
    assert main(["merge", str(first), str(second), "--out", str(out)]) == 4
    assert f"{second / 'results.jsonl'}:7: not a case record" in capsys.readouterr().err
    assert not out.exists()


def test_a_key_a_shard_kept_does_not_reach_the_merged_run(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    first, second = write_shards(tmp_path)
    path = second / "results.jsonl"
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    lines[0]["response"]["text"] = f"the key is {KEY}"
    lines[1]["judge"]["reason"] = f"Bearer {KEY}"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    out = tmp_path / "merged"
    assert main(["merge", str(first), str(second), "--out", str(out)]) in (0, 1)
    for file in out.iterdir():
        assert KEY.encode() not in file.read_bytes(), file


def _told(summary: dict[str, Any], *warnings: str) -> None:
    """A summary as the pytest session writes it: the records' warnings, then what the run was told."""
    summary["warnings"] = [*summary["warnings"], *warnings]


def test_a_merge_keeps_the_warnings_its_shards_were_told_once_and_finds_the_rest_again(tmp_path):
    from pytest_guardbench.runfolder.facts import demo_warnings
    from pytest_guardbench.settings.config import Settings
    from tests.builders import record
    from tests.fuzz.runs import write_run

    [demo] = demo_warnings(Settings())  # the main job runs the demo stack
    served = "tutor t answered as someone-else-7b, not m"
    # Records that give warnings of their own, with counts that differ from shard to shard.
    records = [record(f"p.i{n}.original", n % 2 == 0, error=n % 3 == 0, base=f"i{n}") for n in range(12)]
    whole = write_run(tmp_path / "whole", records)
    shards = [
        write_run(tmp_path / f"shard{i}", [r for n, r in enumerate(records) if n % 2 == i - 1], shard=f"{i}/2")
        for i in (1, 2)
    ]
    _edit(whole / "summary.json", lambda s: _told(s, demo, served))
    _edit(shards[0] / "summary.json", lambda s: _told(s, demo, served))
    _edit(shards[1] / "summary.json", lambda s: _told(s, demo))
    assert any("pipeline error" in w for w in load_run(shards[0]).warnings), "a warning the records give"
    out = tmp_path / "merged"
    assert main(["merge", *map(str, shards), "--out", str(out)]) in (0, 1)
    merged = load_run(out).warnings
    assert merged == load_run(whole).warnings, "the unsharded run's warnings, each once"
    assert merged.count(demo) == 1 and merged.count(served) == 1
