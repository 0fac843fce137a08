"""The named units a run can select, one registry per kind: tutors (`--tutor`), guards
(`--guardrail`), judges (`--judge`) and mutators (`--guardbench-variants`). Each starts with the
built-in ones; conftest files and plugins add theirs through the `pytest_guardbench_register_*`
hooks. Factories run only when a unit is used, so the MiniLM-based units import torch lazily."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_guardbench.guards import GuardRegistry, KeywordGuard, OfflineGuard, SemanticGuard
from pytest_guardbench.guards.knowledge import load_knowledge
from pytest_guardbench.guards.offline_guard import KB_DESCRIPTION, offline_kb_guard
from pytest_guardbench.judges.base import JudgeRegistry
from pytest_guardbench.judges.rules import RulesJudge
from pytest_guardbench.judges.offline import KB_DESCRIPTION as KB_JUDGE_DESCRIPTION
from pytest_guardbench.judges.offline import OfflineJudge, offline_kb_judge
from pytest_guardbench.providers import ProviderOptions, ProviderRegistry, builtin_registry, minilm_embedder
from pytest_guardbench.cases.variants import MutatorRegistry, builtin_variants


@dataclass(frozen=True)
class Units:
    tutors: ProviderRegistry
    guards: GuardRegistry
    judges: JudgeRegistry
    mutators: MutatorRegistry


def builtin_guards() -> GuardRegistry:
    guards: GuardRegistry = GuardRegistry("guardrail")
    guards.register("keyword", lambda options: KeywordGuard(), KeywordGuard.description)
    guards.register(
        "offline", lambda options: OfflineGuard(minilm_embedder(options)), OfflineGuard.description, runs_a_model=True
    )
    guards.register(
        "offline-kb", lambda options: offline_kb_guard(minilm_embedder(options)), KB_DESCRIPTION, runs_a_model=True
    )
    guards.register(
        "semantic",
        lambda options: SemanticGuard(minilm_embedder(options)),
        SemanticGuard.description,
        runs_a_model=True,
    )
    return guards


def builtin_judges() -> JudgeRegistry:
    judges: JudgeRegistry = JudgeRegistry("judge")
    judges.register(
        "offline", lambda options: OfflineJudge(minilm_embedder(options)), OfflineJudge.description, runs_a_model=True
    )
    judges.register(
        "offline-kb",
        lambda options: _offline_kb_judge(options),
        KB_JUDGE_DESCRIPTION,
        runs_a_model=True,
    )
    judges.register("rules", lambda options: RulesJudge(), RulesJudge.description)
    return judges


def _offline_kb_judge(options: ProviderOptions) -> OfflineJudge:
    knowledge = load_knowledge()  # first: without the kb extra, one message naming what to install, before MiniLM loads
    return offline_kb_judge(minilm_embedder(options), knowledge)


def builtin_units() -> Units:
    return Units(
        tutors=builtin_registry(), guards=builtin_guards(), judges=builtin_judges(), mutators=builtin_variants()
    )
