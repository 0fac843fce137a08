"""Results: the writers and renderers of a run folder's files (summary.json, summary.md, the CSV,
report.html, the terminal lines, the GitHub step summary) over the typed documents of
`pytest_guardbench.document`, and the one-row-per-case table for notebooks (`frame.load_results`)."""

from __future__ import annotations

from pytest_guardbench.document.read import iter_records, load_records, load_run
from pytest_guardbench.document.summary import RunSummary
from pytest_guardbench.results.frame import load_results

__all__ = ["RunSummary", "iter_records", "load_records", "load_results", "load_run"]
