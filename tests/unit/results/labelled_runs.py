"""Run folders for the tests of what a run shows (terminal, summary.md, report.html, compare): one
judged only, one corrected by labels of its own replies, and one whose labels match none of its
replies; all written through the real finish (`write_rescored_run`, `correct_run_folder`)."""

from __future__ import annotations

import json
import random
from pathlib import Path

from pytest_guardbench.audit.label_files import load_run_labels
from pytest_guardbench.audit.labels import reply_sha256
from pytest_guardbench.document.summary import RunInfo, RunSummary
from pytest_guardbench.records import CaseRecord, JudgeLabel
from pytest_guardbench.runfolder.correct import correct_run_folder
from pytest_guardbench.runfolder.rescored import write_rescored_run
from pytest_guardbench.settings.config import Thresholds
from tests.builders import V2, record

# The judge calls every reply to a safe prompt "answered"; a person finds that `NOT_ANSWERED` of the
# 40 did not answer the child (an off-topic sentence), so the judge-only FPR is 0 and the true one is not.
NOT_ANSWERED = 30
BARS = Thresholds(min_recall=0.5, max_fpr=0.25)


def population(seed: int = 5) -> list[tuple[CaseRecord, str, str]]:
    """40 harmful prompts (the judge right about each) and 40 safe ones the judge calls answered: each
    record with the labels a person gives its reply."""
    rng = random.Random(seed)
    rows = []
    for i in range(40):
        unsafe = rng.random() < 0.2
        verdict = "unsafe" if unsafe else "safe"
        rows.append((record(f"h{i:03d}", True, verdict, "answered", reply=f"reply {i}"), verdict, "answered"))
    for i in range(40):
        truth = "non_answer" if i < NOT_ANSWERED else "answered"
        rows.append(
            # Each its own reply: one reply to many prompts is a repeated reply, a non-answer by itself.
            (
                record(
                    f"s{i:03d}", False, "safe", "answered", variant="typo" if i % 2 else "original", reply=f"safe {i}"
                ),
                "safe",
                truth,
            )
        )
    return rows


def judged_run(folder: Path, rows: list[tuple[CaseRecord, str, str]], run_id: str = "run") -> Path:
    """A finished run folder of `rows`' records, gated on `BARS` (rescored from a first folder held to
    them, as `guardbench rejudge` rescores a run)."""
    records = [r for r, _, _ in rows]
    first = write_rescored_run(
        folder.with_name(folder.name + "-first"),
        records,
        None,
        run=RunInfo(run_id=run_id),
        manifest={},
        meta=None,
        policy=V2,
    )
    held = first.model_copy(update={"thresholds": BARS, "stack": first.stack.model_copy(update={"judge": "rules"})})
    write_rescored_run(folder, records, held, run=RunInfo(run_id=run_id), manifest={}, meta=None, policy=V2)
    return folder


def labels_file(path: Path, rows: list[tuple[CaseRecord, str, str]], ids: list[str]) -> Path:
    """Label rows of the random design for `ids`, as `guardbench audit` writes them."""
    by_id = {r.case_id: (r, safety, mode) for r, safety, mode in rows}
    lines = []
    for case_id in ids:
        rec, safety, mode = by_id[case_id]
        assert rec.response is not None
        row = JudgeLabel(
            id=case_id,
            prompt=rec.prompt_text,
            response=rec.response.text,
            human_label=safety,  # type: ignore[arg-type]
            answer_mode=mode,  # type: ignore[arg-type]
            is_harmful=rec.is_harmful,
            reply_sha256=reply_sha256(rec.response.text),
            design="random",
            stratum="random",
        )
        lines.append(json.dumps(row.model_dump(mode="json", exclude_none=True)))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def corrected_run(tmp_path: Path, labelled: int = 60) -> tuple[Path, RunSummary]:
    """A run corrected by `labelled` random labels of its own replies."""
    rows = population()
    run = judged_run(tmp_path / "corrected", rows)
    ids = random.Random(1).sample(sorted(r.case_id for r, _, _ in rows), labelled)
    labels = labels_file(tmp_path / "labels.jsonl", rows, ids)
    return run, correct_run_folder(run, load_run_labels(labels))


def unmatched_run(tmp_path: Path) -> tuple[Path, RunSummary]:
    """A run whose labels are of another run's replies (other case ids): none of them match."""
    rows = population()
    run = judged_run(tmp_path / "unmatched", rows)
    other = [(r.model_copy(update={"case_id": "other-" + r.case_id}), s, m) for r, s, m in rows]
    labels = labels_file(tmp_path / "other-labels.jsonl", other, [r.case_id for r, _, _ in other[:50]])
    return run, correct_run_folder(run, load_run_labels(labels))
