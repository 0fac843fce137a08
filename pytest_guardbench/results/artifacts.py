"""The run folder's files under reports/<run-id>/. Writes files; never prints.

summary.json keeps everything that depends on time or the run id under the top-level "run" key, so
two runs over the same input differ only there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from pytest_guardbench._util.files import write_files
from pytest_guardbench._util.redact import writable
from pytest_guardbench.results.markdown import summary_markdown
from pytest_guardbench.document.meta import FolderMeta, meta_json
from pytest_guardbench.document.summary import RunSummary
from pytest_guardbench.results.variant_csv import variant_csv


def json_text(payload: object) -> str:
    """A run folder's JSON document as it is written: indented, keys sorted, UTF-8."""
    return json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_text(path: Path, text: str) -> None:
    """`text` as UTF-8, whole or not at all (`_util.files`). A lone surrogate (half of a pair, as an
    older run folder or a seed file may hold it escaped) has no UTF-8 form: it is written as U+FFFD, as
    results.jsonl writes it, rather than no file."""
    write_files([(path, writable(text))])


def write_json(path: Path, payload: object) -> None:
    write_text(path, json_text(payload))


def write_meta(run_dir: Path, meta: FolderMeta) -> None:
    write_json(run_dir / "meta.json", meta_json(meta))


def documents(summary: RunSummary, manifest: Mapping[str, object], meta: FolderMeta | None) -> dict[str, str]:
    """The run folder's documents made from its summary, by file name: summary.json, summary.md,
    variant_metrics.csv, data_manifest.json and, given `meta`, meta.json (a folder that had none,
    corrected in place, gets none)."""
    texts = {
        "summary.json": json_text(summary.as_json()),
        "summary.md": summary_markdown(summary),
        "variant_metrics.csv": variant_csv(summary),
        "data_manifest.json": json_text(manifest),
    }
    if meta is not None:
        texts["meta.json"] = json_text(meta_json(meta))
    return texts


def write_documents(run_dir: Path, texts: Mapping[str, str | None]) -> None:
    """Every document of `texts` (file name -> text; None removes the file) written into `run_dir`
    together: all of them or none (`_util.files.FileSet`), so a rewrite of a folder (correct, rejudge,
    merge) never leaves a new summary.json beside an old report.html. The OSError names the file it
    failed on; no temporary file is left."""
    write_files((run_dir / name, None if text is None else writable(text)) for name, text in texts.items())
