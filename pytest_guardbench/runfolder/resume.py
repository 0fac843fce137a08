"""Finishing a run that was stopped: which cases of a run folder are done, and whether the folder
belongs to the same stack as the current run.

A killed run leaves `results.jsonl` with one line per finished case and maybe a cut-off last line.
On resume the controller folds every earlier line into `resume_base.jsonl` (the finished cases,
errors dropped so they run again) and starts a fresh `results.jsonl`; each case, reused or rerun,
is then written to it exactly once."""

from __future__ import annotations

from collections.abc import Mapping

import contextlib

from pytest_guardbench._util.files import FileWriteError
from pytest_guardbench.errors import DataError
from pytest_guardbench.document.meta import FolderMeta
from pytest_guardbench.document.meta import IDENTITY_KEYS
from pytest_guardbench.document.meta import MergedMeta
from pytest_guardbench.document.meta import RejudgedMeta
from pytest_guardbench.document.meta import RunMeta
from pytest_guardbench.document.read import read_meta

import json
import os
from pathlib import Path

from pydantic import ValidationError

from pytest_guardbench.errors import RunFolderError
from pytest_guardbench.records import Case, CaseRecord

RESUME_BASE = "resume_base.jsonl"


class ResumeError(RunFolderError, ValueError):
    """The folder cannot be resumed; the message names it and says why."""


def read_records_tolerant(path: Path) -> tuple[dict[str, CaseRecord], int]:
    """Records by case id (last line wins) and the number of unreadable lines skipped (a run killed
    mid-write leaves at most one)."""
    records: dict[str, CaseRecord] = {}
    skipped = 0
    if not path.is_file():
        return records, skipped
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            record = CaseRecord.parse_json(line)
        except (ValidationError, ValueError):
            skipped += 1
            continue
        records[record.case_id] = record
    return records, skipped


def check_same_run(run_dir: Path, current_meta: Mapping[str, object]) -> None:
    try:
        meta = read_meta(run_dir)
    except DataError as exc:
        raise ResumeError(f"--guardbench-resume {run_dir}: {exc}") from None
    if meta is None:
        return
    if not isinstance(meta, RunMeta):
        raise ResumeError(f"--guardbench-resume {run_dir}: written by guardbench {_maker(meta)}, not by a pytest run")
    stored = meta.identity()
    current = json.loads(json.dumps(current_meta, default=str))  # as it would read back from meta.json
    # A key an older folder did not record cannot be compared; every key it did record must match.
    differing = [
        _difference(key, stored[key], current.get(key))
        for key in IDENTITY_KEYS
        if key in stored and stored[key] != current.get(key)
    ]
    if differing:
        raise ResumeError(
            f"--guardbench-resume {run_dir}: that run used a different {'; '.join(differing)}; start a new run instead"
        )


def _maker(meta: FolderMeta) -> str:
    return "merge" if isinstance(meta, MergedMeta) else "rejudge" if isinstance(meta, RejudgedMeta) else "import-seed"


def _difference(key: str, stored: object, current: object) -> str:
    """`stack.policy (refusal, now assistant_policy_v2)`: which part differs and how, so the user knows what to pass."""
    if isinstance(stored, dict) and isinstance(current, dict):
        parts = sorted(k for k in stored.keys() | current.keys() if stored.get(k) != current.get(k))
        return "; ".join(_difference(f"{key}.{part}", stored.get(part), current.get(part)) for part in parts)
    if key.endswith("sha256"):
        return key.removesuffix("_sha256").replace("_", " ")
    return f"{key} ({_shown(stored)}, now {_shown(current)})"


def _shown(value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, list):
        return ",".join(map(str, value)) or "none"
    return str(value)


def stale(record: CaseRecord, case: Case) -> bool:
    """A record measured a different case than the one now under its id: the pack was edited
    (same ids, new text, label or category) between the stopped run and the resume."""
    return (record.prompt_text, record.is_harmful, record.variant, record.sample_index, record.category) != (
        case.prompt_text,
        case.is_harmful,
        case.variant,
        case.sample_index,
        case.category,
    ) or _script_changed(record, case)


def _script_changed(record: CaseRecord, case: Case) -> bool:
    """A conversation's written turns (the pack's and a variant's, with their labels) differ from the
    ones the record ran, or the script grew or shrank under a conversation that ran to its end."""
    if not record.turns and not case.turns:
        return False

    def written(role: str, content: str, source: str, label: bool | None) -> tuple[str, str, str, bool | None]:
        return role, content, source, label if role == "user" else None

    ran = [written(t.role, t.content, t.source, t.is_harmful) for t in record.turns if t.source in ("pack", "variant")]
    script = [
        written(t.role, t.content, t.source, t.is_harmful if t.is_harmful is not None else case.is_harmful)
        for t in case.turns
        if t.source in ("pack", "variant")
    ]
    ended_early = record.response is not None and record.response.source == "guard_block"
    return ran != script[: len(ran)] or (not ended_early and len(ran) != len(script))


def prepare(
    run_dir: Path, current_meta: Mapping[str, object], cases: dict[str, Case]
) -> tuple[dict[str, CaseRecord], int, list[str]]:
    """Controller side: fold the folder's finished cases into resume_base.jsonl and empty
    results.jsonl. Returns the reusable records (no errors, same case as now), the count of skipped
    lines, and the ids of cases whose text or label changed since (they run again)."""
    if not run_dir.is_dir():
        raise ResumeError(f"--guardbench-resume {run_dir}: no such run folder")
    results = run_dir / "results.jsonl"
    if not results.is_file() and not (run_dir / RESUME_BASE).is_file():
        raise ResumeError(f"--guardbench-resume {run_dir}: no results.jsonl (expected a reports/<run-id> folder)")
    check_same_run(run_dir, current_meta)
    earlier, skipped_base = read_records_tolerant(run_dir / RESUME_BASE)
    latest, skipped = read_records_tolerant(results)
    finished = {case_id: r for case_id, r in {**earlier, **latest}.items() if r.error is None}
    changed = sorted(cid for cid, r in finished.items() if cid in cases and stale(r, cases[cid]))
    # Cases the edited pack no longer has are not part of this run: counted as finished they would
    # make the resumed run look larger than its pack.
    dropped = [cid for cid in finished if cid not in cases]
    for case_id in (*changed, *dropped):
        del finished[case_id]
    tmp = run_dir / (RESUME_BASE + ".tmp")
    try:
        with tmp.open("w", encoding="utf-8") as handle:
            for record in finished.values():
                handle.write(record.json_line())
        os.replace(tmp, run_dir / RESUME_BASE)
    except OSError as exc:
        # Streamed, not held: a run's records may be many. A failure names the file and leaves no part of it.
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise FileWriteError(exc.errno, exc.strerror, str(run_dir / RESUME_BASE)) from None
    results.write_text("", encoding="utf-8")
    return finished, skipped + skipped_base, changed


def load_base(run_dir: Path) -> dict[str, CaseRecord]:
    """Worker side: the finished cases the controller prepared."""
    records, _ = read_records_tolerant(run_dir / RESUME_BASE)
    return records
