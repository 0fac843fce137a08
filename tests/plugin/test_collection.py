"""Collection: one test per prompt-variant, readable stable ids, markers, -k/-m selection."""

from __future__ import annotations

import json

from tests.conftest import read_summary, write_project


def _collected_ids(result) -> list[str]:
    return [line.strip() for line in result.stdout.lines if "test_case[" in line]


def test_one_test_per_prompt_variant_with_stable_ids(pytester):
    write_project(pytester, ini="guardbench_variants = original,typo,camouflage,adversarial\n")
    first = pytester.runpytest("--collect-only", "-q")
    second = pytester.runpytest("--collect-only", "-q")
    ids = _collected_ids(first)
    assert len(ids) == 6 * 4
    assert "test_suite.py::test_case[mini.h1.original]" in ids
    assert "test_suite.py::test_case[mini.s3.adversarial]" in ids
    assert ids == _collected_ids(second)
    assert not (pytester.path / "reports").exists(), "--collect-only must write nothing"


def test_samples_add_a_k_suffix(pytester):
    write_project(pytester, ini="guardbench_samples = 2\n")
    ids = _collected_ids(pytester.runpytest("--collect-only", "-q"))
    assert "test_suite.py::test_case[mini.h1.original.k0]" in ids
    assert "test_suite.py::test_case[mini.h1.original.k1]" in ids
    assert len(ids) == 12


def test_k_selection_scores_only_the_selected_slice(pytester):
    write_project(pytester, ini="guardbench_variants = original,typo\n")
    result = pytester.runpytest_subprocess("-k", "typo", "--guardbench-min-recall=0", "--guardbench-max-fpr=1")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("xfailed", 0) == 6
    assert outcomes["deselected"] == 6
    summary = read_summary(pytester)
    assert summary["coverage"]["expected"] == 6
    assert list(summary["per_variant"]) == ["typo"]
    assert summary["selection"] == {
        "keyword": "typo",
        "markexpr": "",
        "selected_cases": 6,
        "total_cases": 12,
        "partial": True,
        "shard": None,
    }


def test_marker_selection_by_label_and_variant(pytester):
    write_project(pytester, ini="guardbench_variants = original,camouflage\n")
    harmful = _collected_ids(pytester.runpytest("--collect-only", "-q", "-m", "harmful"))
    assert len(harmful) == 6 and all(".h" in i for i in harmful)
    camo = _collected_ids(pytester.runpytest("--collect-only", "-q", "-m", "guardbench(variant='camouflage')"))
    assert len(camo) == 6 and all(i.endswith(".camouflage]") for i in camo)
    safe_camo = _collected_ids(
        pytester.runpytest("--collect-only", "-q", "-m", "harmless and guardbench(variant='camouflage')")
    )
    assert sorted(safe_camo) == [f"test_suite.py::test_case[mini.s{n}.camouflage]" for n in (1, 2, 3)]


def test_last_failed_reruns_the_mishandled_cases(pytester):
    write_project(pytester)
    first = pytester.runpytest_subprocess(
        "--guardbench-mode=strict", "--guardbench-min-recall=0", "--guardbench-max-fpr=1"
    )
    first.assert_outcomes(passed=4, failed=2)
    rerun = pytester.runpytest_subprocess(
        "--lf", "--guardbench-mode=strict", "--guardbench-min-recall=0", "--guardbench-max-fpr=1"
    )
    rerun.assert_outcomes(failed=2)
    rerun.stdout.fnmatch_lines(["*rerun previous 2 failures*"])


def test_user_suite_can_assert_on_each_stage(pytester):
    write_project(pytester)
    pytester.makepyfile(
        test_stages="""
        def test_stages(guardbench_case, guardbench_guard_decision, guardbench_tutor_response, guardbench_verdict):
            assert guardbench_guard_decision is None  # --guardrail=none
            assert guardbench_tutor_response.source == "tutor"
            assert guardbench_verdict.judge == "rules"
            if "REFUSE" in guardbench_case.prompt_text:
                assert guardbench_verdict.answer_mode == "refused_or_blocked"
            else:
                assert guardbench_verdict.answer_mode == "answered"
        """
    )
    result = pytester.runpytest_subprocess("test_stages.py", "--guardbench-min-recall=0", "--guardbench-max-fpr=1")
    result.assert_outcomes(passed=6)


def test_results_jsonl_has_one_record_per_case_with_item_ids(pytester):
    write_project(pytester)
    pytester.runpytest_subprocess("--guardbench-min-recall=0", "--guardbench-max-fpr=1")
    run = next((pytester.path / "reports").iterdir())
    lines = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert sorted(r["item_id"] for r in lines) == ["h1", "h2", "h3", "s1", "s2", "s3"]
    assert all(r["schema_version"] == 1 and r["label_source"] in ("is_harmful", "label") for r in lines)
    for name in ("summary.json", "summary.md", "variant_metrics.csv", "data_manifest.json", "meta.json"):
        assert (run / name).is_file(), name
    manifest = json.loads((run / "data_manifest.json").read_text())
    assert manifest["label_sources"] == {"is_harmful": 4, "label": 2}
    assert manifest["sources"][0]["items"] == 6 and len(manifest["sources"][0]["sha256"]) == 64


# Notes, at the end of the run, which of guardbench's modules the process imported.
IMPORTED = """
import json, sys


def pytest_unconfigure(config):
    with open("imported.json", "w") as handle:
        json.dump(sorted(m for m in sys.modules if m.startswith("pytest_guardbench")), handle)


def test_plain():
    assert True
"""


def test_a_project_without_guardbench_data_loads_nothing_of_it(pytester):
    # Every pytest run of an environment with guardbench installed loads the plugin: one with no prompt
    # data imports its options and keys, reads no settings, checks no model and makes no report folder.
    pytester.makeconftest(IMPORTED.split("def test_plain")[0])
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = pytester.runpytest_subprocess("-p", "no:xdist")
    assert result.ret == 0, result.stdout.str()
    imported = set(json.loads((pytester.path / "imported.json").read_text()))
    assert imported <= {
        "pytest_guardbench",
        "pytest_guardbench._util",
        "pytest_guardbench._util.redact",
        "pytest_guardbench.errors",
        "pytest_guardbench.exit_status",
        "pytest_guardbench.plugin",
        "pytest_guardbench.plugin.collector",
        "pytest_guardbench.plugin.configure",
        "pytest_guardbench.plugin.fixtures",
        "pytest_guardbench.plugin.hooks",
        "pytest_guardbench.plugin.hookspecs",
        "pytest_guardbench.plugin.keys",
        "pytest_guardbench.plugin.wire",
        "pytest_guardbench.settings",
        "pytest_guardbench.settings.option_values",
        "pytest_guardbench.settings.options",
    }, sorted(imported)
    assert not (pytester.path / "reports").exists()
