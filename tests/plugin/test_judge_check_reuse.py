"""The judge-quality check is paid once per (judge, audit file): a second run reads it back."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import SCRIPTED_TUTOR_CONFTEST, read_summary, write_project

LABELS = Path(__file__).resolve().parents[2] / "pytest_guardbench" / "datasets" / "judge_labels_v1.jsonl"

# A judge that writes every prompt it is asked about to a file, so the test sees which calls a run made.
COUNTING_JUDGE = """
from pathlib import Path
from pytest_guardbench.judges.rules import RulesJudge

class CountingJudge(RulesJudge):
    name = "counting"

    def judge(self, inputs):
        with open(Path(__file__).parent / "judged.txt", "a", encoding="utf-8") as log:
            log.writelines(item.prompt.replace("\\n", " ") + "\\n" for item in inputs)
        return super().judge(inputs)

def pytest_guardbench_register_judges(registry):
    registry.register("counting", lambda options: CountingJudge(), "Rules judge that logs what it judges (tests only).")
"""


def _run(pytester: pytest.Pytester, labels: Path, *args: str) -> tuple[list[str], dict]:
    log = pytester.path / "judged.txt"
    log.unlink(missing_ok=True)
    shutil.rmtree(pytester.path / "reports", ignore_errors=True)
    result = pytester.runpytest_subprocess(
        "--judge=counting",
        f"--guardbench-judge-check={labels}",
        "--guardbench-min-recall=0",
        "--guardbench-max-fpr=1",
        *args,
    )
    assert result.ret == 0, result.stdout.str()
    judged = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return judged, read_summary(pytester)


@pytest.mark.parametrize("dist", [["-p", "no:xdist"], ["-n", "2"]], ids=["no_xdist", "n2"])
def test_second_run_reuses_the_check_and_a_changed_audit_file_recomputes(pytester, dist):
    write_project(pytester)
    pytester.makeconftest(SCRIPTED_TUTOR_CONFTEST + COUNTING_JUDGE)
    labels = pytester.path / "labels.jsonl"
    shutil.copy(LABELS, labels)
    audit_rows = len([line for line in labels.read_text(encoding="utf-8").splitlines() if line.strip()])

    first, summary = _run(pytester, labels, *dist)
    # The six cases, then one easy judgement that the judge can answer at all, then the audit rows.
    assert len(first) == 6 + 1 + audit_rows
    quality = summary["judge_quality"]
    stored = Path(quality["stored_check"]["path"])
    assert stored.parent == pytester.path / ".guardbench" / "judge_checks" and stored.is_file()
    assert summary["run"]["execution"]["judge_check"]["reused"] is False

    second, again = _run(pytester, labels, *dist)
    assert len(second) == 6  # the cases were judged, the audit rows were not
    assert again["judge_quality"] == quality  # the same measurement, with the same source
    assert again["run"]["execution"]["judge_check"] == {**quality["stored_check"], "reused": True}

    rows = labels.read_text(encoding="utf-8").splitlines()
    labels.write_text("\n".join(rows[:-1]) + "\n", encoding="utf-8")
    third, changed = _run(pytester, labels, *dist)
    assert len(third) == 6 + 1 + audit_rows - 1
    assert changed["judge_quality"]["rows"] == quality["rows"] - 1
    assert changed["run"]["execution"]["judge_check"]["reused"] is False
