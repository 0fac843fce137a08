"""Scoring: policies, outcomes, scorecards, metrics, intervals, gates, baselines and sweeps. Pure functions, no pytest."""
