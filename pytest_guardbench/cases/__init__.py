"""Cases: prompt packs, JSONL datasets and CSV files read into validated items, and expanded into stress variants
by the mutators.

The names below are what a plugin or conftest needs to add a stress variant (`pytest_guardbench_register_mutators`)."""

from __future__ import annotations

from pytest_guardbench.cases.conversations import ConversationVariant
from pytest_guardbench.cases.mutators import Mutator
from pytest_guardbench.cases.variants import MutatorRegistry

__all__ = ["ConversationVariant", "Mutator", "MutatorRegistry"]
