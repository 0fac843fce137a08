"""Safety judges: the Judge protocol, the rules judge, the LLM judge with strict JSON, the offline judge of trained
heads, and judge quality against human labels.

The names below are what a plugin or conftest needs to add a judge (`pytest_guardbench_register_judges`)."""

from __future__ import annotations

from pytest_guardbench.judges.base import Judge, JudgeInput, JudgeRegistry

__all__ = ["Judge", "JudgeInput", "JudgeRegistry"]
