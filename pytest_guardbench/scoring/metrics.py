"""Every metric of a run from a list of records: the scorecards (whole run, per variant, family and
category), how a prompt's variants and samples agree (row buckets, flip rates against `original`),
guard decision rates and sweeps, coverage, usage and warnings. Each is one `tally.RunTally` pass;
these are the entry points for records already in memory (tests, notebooks, the audit)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pytest_guardbench.records import Case, CaseRecord
from pytest_guardbench.document.metrics import Coverage, LostReport, RunMetrics, Usage
from pytest_guardbench.document.scorecards import FlipRate, GuardSides, RowBuckets
from pytest_guardbench.scoring.policies import DEFAULT_POLICY, ScoringPolicy, policy_named
from pytest_guardbench.document.scorecards import GuardSweep
from pytest_guardbench.scoring.tally import RunTally


def _tally(records: Sequence[CaseRecord], policy: ScoringPolicy, target_recall: float = 0.9) -> RunTally:
    return RunTally(policy, target_recall).add_all(records)


def summarise(
    expected: Sequence[Case],
    records: Sequence[CaseRecord],
    policy: ScoringPolicy,
    lost: Sequence[LostReport] = (),
) -> RunMetrics:
    """Every metric of a run, deterministic for the same records in any order. `expected`: the
    selected cases (records of cases outside it still count). `guardbench compare` and `merge`
    refuse to mix runs whose `metric_definitions` differ."""
    tally = _tally(records, policy)
    return tally.metrics([c for c in expected if c.case_id not in tally.received], lost)


def prompt_row_buckets(records: Sequence[CaseRecord], policy: ScoringPolicy) -> RowBuckets:
    return _tally(records, policy).prompt_row_buckets()


def flip_rates(records: Sequence[CaseRecord], policy: ScoringPolicy) -> dict[str, FlipRate]:
    return _tally(records, policy).flip_rates()


def coverage(expected: Sequence[Case], records: Sequence[CaseRecord], policy: ScoringPolicy) -> Coverage:
    return summarise(expected, records, policy).coverage


def guard_decision_rates(records: Sequence[CaseRecord], policy: ScoringPolicy | None = None) -> dict[str, GuardSides]:
    return summarise([], records, policy or policy_named(DEFAULT_POLICY)).guard_decisions


def guard_sweeps(records: Sequence[CaseRecord], target_recall: float) -> dict[str, GuardSweep]:
    """One sweep per guard that scored at least one labelled case (errors after the guard still count)."""
    return _tally(records, policy_named(DEFAULT_POLICY), target_recall).guard_sweeps()


def usage(records: Sequence[CaseRecord], prices: Mapping[str, Mapping[str, float]]) -> Usage:
    return _tally(records, policy_named(DEFAULT_POLICY)).usage(prices)
