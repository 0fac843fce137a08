"""Scoring: policies, outcomes, scorecards, metrics, intervals, gates, baselines, sweeps and
audit-corrected estimates. Pure functions, no pytest.

The names below score a record under a named policy, the way every run does."""

from __future__ import annotations

from pytest_guardbench.scoring.policies import POLICIES, ScoringPolicy, policy_named
from pytest_guardbench.document.scorecards import Scorecard
from pytest_guardbench.scoring.scorecard import Scored, score_record

__all__ = ["POLICIES", "Scorecard", "Scored", "ScoringPolicy", "policy_named", "score_record"]
