"""summary.json's `run.execution`: how the run was executed, added up over its processes (the
controller and every xdist worker): cases run and reused, the response cache, each role's API calls,
where the judge check came from, and a resume's source."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict

from pytest_guardbench.document.base import GivenKeysBlock
from pytest_guardbench.document.judging import StoredCheck


class CacheCounts(GivenKeysBlock):
    """The response cache's hits, misses and writes."""

    hits: int
    misses: int
    writes: int


class ApiCalls(GivenKeysBlock):
    """One role's API model: calls, retries and rate limits. The one open block: a provider of a
    plugin reports counters of its own (`ChatProvider.stats`), kept as they are."""

    model_config = ConfigDict(frozen=True, extra="allow")

    calls: int | None = None
    retries: int | None = None
    rate_limited: int | None = None
    lowest_concurrency: int | None = None
    structured_output_rejected: str | None = None  # the server's refusal of a JSON schema
    circuit_breaker: dict[str, Any] | None = None
    endpoints: dict[str, dict[str, Any]] | None = None


class ResumeFacts(GivenKeysBlock):
    """Where a resumed run took its finished cases from."""

    run_dir: str
    finished_before: int
    unreadable_lines: int
    changed_cases: int
    changed_case_ids: list[str]


class Execution(GivenKeysBlock):
    """How the run was executed, added up over its processes: cases run and reused, the response
    cache, each role's API calls, where the judge check came from, and a resume's source."""

    cases_run: int | None = None
    cases_reused: int | None = None
    case_errors: int | None = None
    cache: CacheCounts | None = None
    api_calls: dict[str, ApiCalls] | None = None
    judge_check: StoredCheck | None = None
    resume: ResumeFacts | None = None
