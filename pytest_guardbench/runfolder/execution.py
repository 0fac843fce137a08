"""How a run was executed, added up over its processes (the controller and every xdist worker):
`run.execution` in summary.json."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pytest_guardbench.document.execution import Execution, ResumeFacts
from pytest_guardbench.document.judging import StoredCheck


def merged_execution(
    parts: Iterable[Mapping[str, Any]], *, judge_check: StoredCheck | None = None, resume: ResumeFacts | None = None
) -> Execution:
    """Each process's counters added up, with where the judge check came from and a resume's source."""
    merged = merge_counts(list(parts))
    if judge_check is not None:
        merged["judge_check"] = judge_check.model_dump(mode="json")
    if resume is not None:
        merged["resume"] = resume.model_dump(mode="json")
    return Execution.model_validate(merged)


def merge_counts(parts: list[Mapping[str, Any]]) -> dict[str, Any]:
    """Add up per-process counters (nested dicts of numbers); `lowest_*` keys keep the minimum and
    strings (a mode, a path) keep the first value seen."""
    merged: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if isinstance(value, dict):
                merged[key] = merge_counts([merged.get(key, {}), value])
            elif isinstance(value, bool) or not isinstance(value, int | float):
                merged.setdefault(key, value)
            elif key.startswith("lowest") and key in merged:
                merged[key] = min(merged[key], value)
            else:
                merged[key] = merged.get(key, 0) + value
    return merged
