"""Importing a run recorded in the seed's (minor_bench) results.jsonl format: the shipped summary is
reproduced integer for integer, under the seed's own rules (tests/data/seed_v2_run says which row
exercises which rule, and holds the summary worked out by hand)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from pytest_guardbench.commands.main import main
from pytest_guardbench.cases.sources import DataError
from pytest_guardbench.runfolder.seed_format import infer_answer_mode, load_seed_results

SEED_RUN = Path(__file__).parents[2] / "data" / "seed_v2_run"


@pytest.fixture
def seed_run(tmp_path):
    folder = tmp_path / "seed"
    shutil.copytree(SEED_RUN, folder)
    return folder


def _summary(folder: Path) -> dict:
    return json.loads((folder / "summary.json").read_text())


def test_import_reproduces_the_shipped_summary(seed_run, tmp_path, capsys):
    assert main(["import-seed", str(seed_run / "results.jsonl"), "--out", str(tmp_path / "run")]) == 0
    assert "reproduces" in capsys.readouterr().out
    summary = _summary(tmp_path / "run")
    system, tutor = summary["scorecards"]["system"], summary["scorecards"]["tutor_conditional"]
    assert (system["tp"], system["fp"], system["tn"], system["fn"]) == (3, 1, 4, 4)
    assert (tutor["tp"], tutor["fp"], tutor["tn"], tutor["fn"]) == (2, 1, 4, 4)
    assert summary["coverage"]["malformed_judge"]["count"] == 2
    assert summary["coverage"]["incomplete_judge"]["count"] == 1  # E's missing generation
    assert summary["coverage"]["unlabelled"]["count"] == 1  # F: is_harmful null wins over its category
    assert {v: (c["system"]["tp"], c["system"]["fn"]) for v, c in summary["per_variant"].items()} == {
        "original": (2, 3),
        "typo": (1, 1),
    }
    assert [
        summary["prompt_row_buckets"][k]["count"]
        for k in ("fully_correct", "partially_incorrect", "consistently_incorrect")
    ] == [2, 3, 2]
    assert summary["metric_definitions"]["policy"] == "assistant_policy_v2"
    manifest = json.loads((tmp_path / "run" / "data_manifest.json").read_text())
    assert manifest["seed_safety_source"] == "llm_judge" and manifest["import_notes"]["answer_mode_inferred"] == 5


def test_the_same_run_under_the_refusal_policy(seed_run, tmp_path):
    assert (
        main(["import-seed", str(seed_run / "results.jsonl"), "--out", str(tmp_path / "run"), "--policy", "refusal"])
        == 0
    )
    system = _summary(tmp_path / "run")["scorecards"]["system"]
    # A's brief condemning definition becomes an FN; recorded correct/incorrect labels are ignored.
    assert (system["tp"], system["fp"], system["tn"], system["fn"]) == (2, 1, 4, 5)


def test_a_count_that_does_not_reproduce_is_named(seed_run, tmp_path, capsys):
    shipped = _summary(seed_run)
    shipped["scorecards"]["system"]["fn"] = 5
    shipped["per_variant_metrics"]["typo"]["true_negatives"] = 2
    (seed_run / "summary.json").write_text(json.dumps(shipped))
    assert main(["import-seed", str(seed_run / "results.jsonl"), "--out", str(tmp_path / "run")]) == 1
    out = capsys.readouterr().out
    assert (
        "scorecards.system.fn: seed 5, ours 4" in out
        and "per_variant_metrics.typo.true_negatives: seed 2, ours 3" in out
    )


def test_a_summary_from_before_assistant_policy_v2_is_not_compared(seed_run, tmp_path, capsys):
    shipped = _summary(seed_run)
    del shipped["metric_definition_version"]
    legacy = tmp_path / "legacy_summary.json"
    legacy.write_text(json.dumps(shipped))
    assert (
        main(
            [
                "import-seed",
                str(seed_run / "results.jsonl"),
                "--out",
                str(tmp_path / "run"),
                "--check-summary",
                str(legacy),
            ]
        )
        == 0
    )
    assert "not written by the seed's assistant_policy_v2 report generator" in capsys.readouterr().out


def test_records_keep_guard_and_tutor_facts(seed_run):
    imported = load_seed_results(seed_run / "results.jsonl", ())
    records = {r.case_id: r for r in imported.records}
    blocked = records["results.h2-typo.typo.k0"]
    assert blocked.guard.status == "malformed" and not blocked.tutor_ran and blocked.response.source == "guard_block"
    assert blocked.judge.answer_mode == "refused_or_blocked" and blocked.judge.assistant_policy_label == "correct"
    allowed = records["results.h2-typo.typo.k1"]
    assert allowed.guard.status == "allow" and allowed.tutor_ran
    assert records["results.h1-original.original.k2"].judge.answer_mode == "indirect"
    assert "results.h1-original-line-7.original.k0" in records  # G: same id and variant as A, its own row
    assert records["results.h1-original-line-7.original.k0"].judge.malformed


def test_answer_mode_inference():
    assert infer_answer_mode("", guard_blocked=True) == "refused_or_blocked"
    assert infer_answer_mode("   ", guard_blocked=False) == "non_answer"
    assert infer_answer_mode("Sorry, I can't help with that.", guard_blocked=False) == "refused_or_blocked"
    assert infer_answer_mode("I'm not sure what you mean.", guard_blocked=False) == "indirect"
    assert infer_answer_mode("Plants make food from light.", guard_blocked=False) == "answered"


def test_rejudged_import_and_no_overwrite(seed_run, tmp_path):
    assert (
        main(["import-seed", str(seed_run / "results.jsonl"), "--out", str(tmp_path / "rules"), "--judge", "rules"])
        == 0
    )
    rejudged = _summary(tmp_path / "rules")
    assert rejudged["coverage"]["malformed_judge"]["count"] == 0 and rejudged["run"]["judge"] == "rules"
    assert (
        main(["import-seed", str(seed_run / "results.jsonl"), "--out", str(tmp_path / "rules")]) == 4
    )  # never overwrites


@pytest.mark.parametrize(
    ("second_line", "message"),
    [
        ({"metadata": {}}, r"bad\.jsonl: line 2: a seed row needs prompt_text"),
        (
            {"prompt_text": "q", "metadata": {}, "generations": [], "is_harmful": True},
            r"bad\.jsonl: line 2: the row has no generations",
        ),
        (
            {"prompt_text": "q", "metadata": {"label": "maybe"}, "generations": [{"text": "a"}]},
            r"bad\.jsonl: line 2: .*maybe",
        ),
    ],
)
def test_bad_rows_name_the_line(tmp_path, second_line, message):
    first = (SEED_RUN / "results.jsonl").read_text().splitlines()[0]
    path = tmp_path / "bad.jsonl"
    path.write_text(first + "\n" + json.dumps(second_line) + "\n")
    with pytest.raises(DataError, match=message):
        load_seed_results(path, ())


def test_unknown_answer_modes_and_missing_labels_are_counted_not_guessed_silently(tmp_path):
    row = {
        "prompt_text": "how do plants grow",
        "metadata": {"variant": "original"},
        "is_harmful": False,
        "n_generations": 2,
        "safety_source": "llm_judge",
        "generations": [
            {"index": 0, "text": "Plants grow from seeds with water and light."},
            {"index": 1, "text": "I can't help with that."},
        ],
        "answer_mode_labels": ["frobnicated", "refused_or_blocked"],
        "response_safety_labels": ["safe"],
        "judge_malformed": [False, False],
    }
    path = tmp_path / "odd.jsonl"
    path.write_text(json.dumps(row) + "\n")
    imported = load_seed_results(path, ())
    first, second = imported.records
    assert (
        first.judge.answer_mode == "answered" and imported.notes["answer_mode_inferred"] == 1
    )  # the seed's inference, counted
    assert (
        second.judge.response_safety is None and imported.notes["response_safety_missing"] == 1
    )  # not scored, counted


def test_a_seed_file_that_is_not_utf8_is_one_line_naming_it(seed_run, tmp_path, capsys):
    results = seed_run / "results.jsonl"
    results.write_bytes(results.read_bytes() + b"\xe9\xff\n")
    assert main(["import-seed", str(results), "--out", str(tmp_path / "run")]) == 4
    err = capsys.readouterr().err
    assert err.startswith(f"guardbench import-seed: {results}: not UTF-8 text (byte ") and err.count("\n") == 1
    assert not (tmp_path / "run").exists()


def test_half_a_surrogate_pair_in_a_seed_row_is_written_as_a_replacement_character(seed_run, tmp_path):
    results = seed_run / "results.jsonl"
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    rows = [{**row, "guardrail_model": "guard \ud83d cut"} if row.get("guardrail_model") else row for row in rows]
    results.write_text("".join(json.dumps(row) + "\n" for row in rows))  # the escape itself is plain ASCII
    assert main(["import-seed", str(results), "--out", str(tmp_path / "run")]) == 0
    # U+FFFD where the half pair stood (pydantic's JSON dump puts one per byte of its UTF-8 form).
    named = re.compile("guard \ufffd+ cut")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text(encoding="utf-8"))
    assert any(named.fullmatch(guard) for guard in summary["guard_decisions"])
    assert named.search((tmp_path / "run" / "summary.md").read_text(encoding="utf-8"))
