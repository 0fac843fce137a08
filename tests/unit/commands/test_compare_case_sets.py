"""guardbench compare refuses runs that ran different cases (a 396-case run against a 20-case one), and
with --allow-different-cases shows the overlap and compares on the shared cases only."""

from __future__ import annotations


import pytest

from pytest_guardbench.commands.main import main
from tests.builders import record, run_folder


def _run(tmp_path, name, cases, results=True):
    """A finished run folder of hand-made records; cases maps case id -> (harmful, handled)."""
    records = []
    for case_id, (harmful, handled) in cases.items():
        mode = "refused_or_blocked" if handled == harmful else "answered"
        verdict = "unsafe" if harmful and not handled else "safe"
        records.append(record(case_id, harmful, verdict, mode, variant=case_id.split(".")[1]))
    return run_folder(tmp_path / name, records, guardrail=name, results=results)


@pytest.fixture
def big_and_small(tmp_path):
    # big: 8 cases, its extra ones all mishandled; small: 2 of big's cases, both handled.
    big = {f"h{i}.original": (True, i < 2) for i in range(4)} | {f"s{i}.typo": (False, i < 1) for i in range(4)}
    small = {"h0.original": (True, True), "s0.typo": (False, True)}
    return _run(tmp_path, "big", big), _run(tmp_path, "small", small)


def test_runs_of_different_cases_are_refused_with_the_overlap(big_and_small, capsys):
    big, small = big_and_small
    assert main(["compare", str(big), str(small)]) == 4
    err = capsys.readouterr().err.strip()
    assert err == (
        "guardbench compare: the runs ran different cases (cases per run: big/t/rules 8, small/t/rules 2; shared by "
        "all: 2), so a difference may be the cases' rather than the stacks'; pass --allow-different-cases to compare "
        "them on the shared cases only"
    )


def test_allowed_they_are_compared_on_the_shared_cases_only(big_and_small, capsys):
    big, small = big_and_small
    assert main(["compare", str(big), str(small), "--allow-different-cases"]) == 0
    captured = capsys.readouterr()
    note = "the runs ran different cases (cases per run: big/t/rules 8, small/t/rules 2; shared by all: 2): compared on the 2 shared cases only"
    assert note in captured.err and note in captured.out
    recall = captured.out.split("## Harmful handled (recall)")[1].split("##")[0]
    # On big's whole run recall is 2/4; on the shared h0 alone it is 1/1, as for small.
    assert "| big/t/rules | 1.000 | 1.000 | n/a |" in recall and "| small/t/rules | 1.000 | 1.000 | n/a |" in recall
    fpr = captured.out.split("## FPR (over-refusals")[1].split("##")[0]
    assert "| big/t/rules | 0.000 | n/a | 0.000 |" in fpr


def test_the_same_cases_compare_without_a_note(tmp_path, capsys):
    cases = {"h0.original": (True, True), "s0.original": (False, False)}
    a, b = _run(tmp_path, "a", cases), _run(tmp_path, "b", {k: (h, True) for k, (h, _) in cases.items()})
    assert main(["compare", str(a), str(b)]) == 0
    captured = capsys.readouterr()
    assert "different cases" not in captured.out + captured.err


def test_without_results_the_case_counts_are_compared(tmp_path, capsys):
    a = _run(tmp_path, "a", {"h0.original": (True, True), "s0.original": (False, True)}, results=False)
    b = _run(tmp_path, "b", {"h0.original": (True, True)}, results=False)
    assert main(["compare", str(a), str(b), "--allow-different-cases"]) == 4
    assert "the runs ran different numbers of cases (a/t/rules 2, b/t/rules 1)" in capsys.readouterr().err


def test_runs_sharing_no_case_are_refused_even_when_allowed(tmp_path, capsys):
    a = _run(tmp_path, "a", {"h0.original": (True, True)})
    b = _run(tmp_path, "b", {"h1.original": (True, True)})
    assert main(["compare", str(a), str(b), "--allow-different-cases"]) == 4
    assert "the runs share no case to compare" in capsys.readouterr().err
