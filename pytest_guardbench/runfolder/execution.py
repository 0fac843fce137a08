"""How a run was executed, added up over its processes (the controller and every xdist worker):
`run.execution` in summary.json."""

from __future__ import annotations

from collections.abc import Iterable

from pytest_guardbench.document.execution import Execution, ResumeFacts
from pytest_guardbench.document.judging import StoredCheck
from pytest_guardbench._util.counters import add_counts


def merged_execution(
    parts: Iterable[Execution],
    *,
    judge_check: StoredCheck | None = None,
    resume: ResumeFacts | None = None,
    shared_limit: bool = True,
) -> Execution:
    """Each part's counters added up (`add_counts`: `shared_limit` says whether the parts split one
    concurrency limit), with where the judge check came from and a resume's source. By default the
    parts are the processes of one run, which split its concurrency (each xdist worker holds
    concurrency / workers: `run.stack.shared_concurrency`), so `-n 2` reports the limit `-n 0` does."""
    merged = add_counts([part.model_dump(mode="json") for part in parts], shared_limit=shared_limit)
    if judge_check is not None:
        merged["judge_check"] = judge_check.model_dump(mode="json")
    if resume is not None:
        merged["resume"] = resume.model_dump(mode="json")
    return Execution.model_validate(merged)
