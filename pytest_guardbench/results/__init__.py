"""Results: the typed run summary and its writers (json, md, csv, html) and readers.

The names below read a finished run folder (a notebook, a script)."""

from __future__ import annotations

from pytest_guardbench.document.summary import RunSummary
from pytest_guardbench.results.summary import iter_records, load_records, load_results, load_run

__all__ = ["RunSummary", "iter_records", "load_records", "load_results", "load_run"]
