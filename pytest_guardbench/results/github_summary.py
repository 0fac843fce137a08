"""The scorecard on the GitHub Actions job page: the markdown summary appended to `$GITHUB_STEP_SUMMARY`."""

from __future__ import annotations

import os

from pytest_guardbench.results.markdown import summary_markdown
from pytest_guardbench.document.summary import RunSummary


def append_step_summary(summary: RunSummary) -> None:
    """In GitHub Actions, add the markdown scorecard and gate result to the job summary."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return
    with open(target, "a", encoding="utf-8") as handle:
        handle.write(summary_markdown(summary) + "\n")
