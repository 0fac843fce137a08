"""The guard a run names: a registered one by name, or the adapter of its guard family around a
model built from an alias or API spec."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pytest_guardbench.guards import (
    CHILD_SAFETY_GUIDELINES,
    WILDGUARD_FORMAT,
    GraniteGuardianAdapter,
    GuardRegistry,
    Guard,
    LlamaGuardAdapter,
    LLMGuard,
    ModerationAdapter,
    NemotronSafetyAdapter,
    ShieldGemmaAdapter,
    WildGuardAdapter,
    granite_version,
)
from pytest_guardbench.providers import ProviderOptions, ScoringChatModel
from pytest_guardbench.settings.model_specs import ModelSpec


def build_guard(
    name: str,
    spec: ModelSpec | None,
    options: ProviderOptions,
    model: Callable[[], Any],
    guards: GuardRegistry,
) -> Guard | None:
    """A registered guard by name (`none`: no guard), or a model guard from its alias or spec."""
    if spec is None:
        return None if name == "none" else guards.build(name, options)
    adapters: dict[str, Callable[[Any], Guard]] = {
        "granite-guardian": lambda m: granite_adapter(spec, m),
        "llama-guard": lambda m: LlamaGuardAdapter(m, name=spec.alias),
        "wildguard": lambda m: WildGuardAdapter(
            m, prompt_format=spec.guard.prompt_format or WILDGUARD_FORMAT, name=spec.alias
        ),
        "shieldgemma": lambda m: shieldgemma_adapter(spec, m),
        "nemotron-safety": lambda m: NemotronSafetyAdapter(m, name=spec.alias),
        "openai-moderation": lambda m: ModerationAdapter(m, name=spec.alias),
        "generic": lambda m: LLMGuard(m, name=spec.alias),
    }
    return adapters[spec.guard.adapter](model())


def shieldgemma_adapter(spec: ModelSpec, model: ScoringChatModel) -> ShieldGemmaAdapter:
    return ShieldGemmaAdapter(
        model,
        policies=spec.guard.risks or tuple(CHILD_SAFETY_GUIDELINES),
        guidelines=tuple(sorted(spec.guard.risk_definitions.items())),
        name=spec.alias,
    )


def granite_adapter(spec: ModelSpec, model: ScoringChatModel) -> GraniteGuardianAdapter:
    return GraniteGuardianAdapter(
        model,
        block_risks=spec.guard.risks or ("harm",),
        observe_risks=spec.guard.observe_risks,
        risk_definitions=tuple(sorted(spec.guard.risk_definitions.items())),
        name=spec.alias,
        version=granite_version(spec.model, spec.guard.granite_version),
        think=spec.guard.think,
        decoding=spec.guard.decoding,
        block_threshold=spec.guard.block_threshold,
    )
