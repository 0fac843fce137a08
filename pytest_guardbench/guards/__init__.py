"""Guards: each turns prompts into raw verdict text and parses it into allow | block | malformed.

One module per guard family; `base` holds the interface and the ALLOW/BLOCK parser they share.
"""

from __future__ import annotations

from pytest_guardbench.guards.base import Guard, parse_decision
from pytest_guardbench._util.registry import Registry
from pytest_guardbench.guards.granite import (
    GraniteGuardianAdapter,
    granite_template_kwargs,
    granite_version,
    parse_granite,
)
from pytest_guardbench.guards.keyword import KeywordGuard
from pytest_guardbench.guards.llama_guard import LLAMA_GUARD_CATEGORIES, LlamaGuardAdapter, parse_llama_guard
from pytest_guardbench.guards.llm_guard import GENERIC_GUARD_INSTRUCTION, GUARD_JSON_SCHEMA, LLMGuard
from pytest_guardbench.guards.moderation import ModerationAdapter, parse_moderation
from pytest_guardbench.guards.nemotron import (
    NEMOTRON_CATEGORIES,
    NemotronSafetyAdapter,
    nemotron_prompt,
    parse_nemotron,
)
from pytest_guardbench.guards.shieldgemma import CHILD_SAFETY_GUIDELINES, ShieldGemmaAdapter, parse_shieldgemma
from pytest_guardbench.guards.wildguard import WILDGUARD_FORMAT, WildGuardAdapter, parse_wildguard
from pytest_guardbench.guards.offline_guard import OfflineGuard
from pytest_guardbench.guards.semantic import HARMFUL_EXEMPLARS, SAFE_EXEMPLARS, SemanticGuard

GuardRegistry = Registry[Guard]


__all__ = [
    "CHILD_SAFETY_GUIDELINES",
    "NEMOTRON_CATEGORIES",
    "WILDGUARD_FORMAT",
    "ModerationAdapter",
    "OfflineGuard",
    "NemotronSafetyAdapter",
    "ShieldGemmaAdapter",
    "WildGuardAdapter",
    "nemotron_prompt",
    "parse_moderation",
    "parse_nemotron",
    "parse_shieldgemma",
    "parse_wildguard",
    "GENERIC_GUARD_INSTRUCTION",
    "GUARD_JSON_SCHEMA",
    "HARMFUL_EXEMPLARS",
    "LLAMA_GUARD_CATEGORIES",
    "SAFE_EXEMPLARS",
    "GraniteGuardianAdapter",
    "GuardRegistry",
    "Guard",
    "KeywordGuard",
    "LLMGuard",
    "LlamaGuardAdapter",
    "SemanticGuard",
    "granite_template_kwargs",
    "granite_version",
    "parse_decision",
    "parse_granite",
    "parse_llama_guard",
]
