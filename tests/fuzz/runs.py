"""Finished run folders made in-process (the finish every writer goes through, no pytest run), to be
copied and corrupted by the fuzz tests: a whole run, and the two shards of one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from pytest_guardbench.records import CaseRecord, TutorReply
from pytest_guardbench.document.summary import RunInfo
from pytest_guardbench.runfolder.rescored import write_rescored_run
from pytest_guardbench.scoring.policies import policy_named
from tests.builders import record, run_meta

SETTINGS = {"attacker": None, "attacker_turns": 4, "harmful_categories": ["danger"], "min_judge_kappa": 0.6}


def _records() -> list[CaseRecord]:
    rows = []
    for n in range(12):
        harmful = n % 2 == 0
        safety, mode = (
            ("unsafe", "answered") if n % 5 == 0 else ("safe", "refused_or_blocked" if harmful else "answered")
        )
        made = record(f"p.i{n}.original", harmful, safety, mode, base=f"i{n}")
        reply = TutorReply(text=f"reply {n}", source="tutor", model="m", prompt_tokens=5, completion_tokens=n + 1)
        rows.append(
            made.model_copy(update={"prompt_text": f"prompt {n}", "response": reply, "timings_s": {"tutor": 0.1 * n}})
        )
    return rows


def write_run(out: Path, records: list[CaseRecord] | None = None, shard: str | None = None, **settings: Any) -> Path:
    """A finished run folder at `out`: summary.json, results.jsonl, meta.json with the settings a merge
    compares, data_manifest.json."""
    given = _records() if records is None else records
    write_rescored_run(
        out,
        given,
        None,
        run=RunInfo(run_id=out.name),
        manifest={"sources": [{"path": "pack.json", "sha256": "0" * 64}], "cases": len(given)},
        meta=run_meta(settings={**SETTINGS, **settings}),
        policy=policy_named("assistant_policy_v2"),
    )
    summary_path = out / "summary.json"
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    summary["run"].update({"internal_errors": [], "worker_crashes": []})
    if shard is not None:
        summary["selection"]["shard"] = shard
    summary_path.write_text(json.dumps(summary), encoding="utf-8")
    return out


def label_row(**fields: str) -> dict[str, str]:
    """A human label of `write_run`'s first case as an audit writes it, with `fields` in its place."""
    row = {
        "id": "p.i0.original",
        "prompt": "prompt 0",
        "response": "reply 0",
        "human_label": "safe",
        "answer_mode": "answered",
        "design": "random",
        "stratum": "random",
    }
    return {**row, **fields}


def write_shards(folder: Path) -> list[Path]:
    """The two shards of one run (the records split by case), each a finished run folder."""
    records = _records()
    return [
        write_run(folder / f"shard{i}", [r for n, r in enumerate(records) if n % 2 == i - 1], shard=f"{i}/2")
        for i in (1, 2)
    ]


def copy_run(source: Path, folder: Path, name: str = "run") -> Path:
    return Path(shutil.copytree(source, folder / name))
