"""The run folder's files under reports/<run-id>/. Writes files; never prints.

summary.json keeps everything that depends on time or the run id under the top-level "run" key, so
two runs over the same input differ only there.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pytest_guardbench._util.redact import writable
from pytest_guardbench.results.markdown import summary_markdown
from pytest_guardbench.document.meta import FolderMeta, meta_json
from pytest_guardbench.document.summary import RunSummary
from pytest_guardbench.results.variant_csv import variant_csv


def write_text(path: Path, text: str) -> None:
    """`text` as UTF-8. A lone surrogate (half of a pair, as an older run folder or a seed file may hold
    it escaped) has no UTF-8 form: it is written as U+FFFD, as results.jsonl writes it, rather than no file."""
    path.write_text(writable(text), encoding="utf-8")


def write_json(path: Path, payload: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    write_text(tmp, json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def write_meta(run_dir: Path, meta: FolderMeta) -> None:
    write_json(run_dir / "meta.json", meta_json(meta))


def write_all(run_dir: Path, summary: RunSummary, manifest: dict[str, Any], meta: FolderMeta | None) -> dict[str, Path]:
    paths = {
        "summary.json": run_dir / "summary.json",
        "summary.md": run_dir / "summary.md",
        "variant_metrics.csv": run_dir / "variant_metrics.csv",
        "data_manifest.json": run_dir / "data_manifest.json",
        "meta.json": run_dir / "meta.json",
        "results.jsonl": run_dir / "results.jsonl",
    }
    write_json(paths["summary.json"], summary.as_json())
    write_text(paths["summary.md"], summary_markdown(summary))
    write_text(paths["variant_metrics.csv"], variant_csv(summary))
    write_json(paths["data_manifest.json"], manifest)
    if meta is not None:  # a folder that had none (corrected in place) gets none
        write_meta(run_dir, meta)
    paths["results.jsonl"].touch()
    return paths
