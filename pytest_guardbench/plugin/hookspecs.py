"""Hooks that conftest files and plugins implement to extend guardbench."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_guardbench.cases.variants import MutatorRegistry
    from pytest_guardbench.document.summary import RunSummary
    from pytest_guardbench.guards import GuardRegistry
    from pytest_guardbench.judges.base import JudgeRegistry
    from pytest_guardbench.providers import ProviderRegistry


@pytest.hookspec()
def pytest_guardbench_register_providers(registry: ProviderRegistry) -> None:
    """Add tutor providers to this run's registry.

    :param registry: a ``pytest_guardbench.providers.ProviderRegistry``; call
        ``registry.register(name, factory, description)`` where ``factory(options)`` returns a
        ``ChatProvider``. Heavy imports belong inside the factory.

    Runs once per process in ``pytest_configure``. Use it from a root ``conftest.py`` or a plugin.
    """


@pytest.hookspec()
def pytest_guardbench_register_guards(registry: GuardRegistry) -> None:
    """Add guardrails to this run's registry, selectable as ``--guardrail=<name>``.

    :param registry: a ``pytest_guardbench.guards.GuardRegistry``; call
        ``registry.register(name, factory, description, runs_a_model=False)`` where
        ``factory(options)`` returns a guard (``name``, ``description``, ``screen(prompts) -> raw
        verdicts``, ``parse(raw) -> GuardDecision``). With ``runs_a_model=True`` the engine hands it
        batches of ``--guardbench-batch-size`` one at a time, as for a local model.

    Runs once per process in ``pytest_configure``, before the options are checked.
    """


@pytest.hookspec()
def pytest_guardbench_register_judges(registry: JudgeRegistry) -> None:
    """Add safety judges to this run's registry, selectable as ``--judge=<name>``.

    :param registry: a ``pytest_guardbench.judges.base.JudgeRegistry``; call
        ``registry.register(name, factory, description, runs_a_model=False)`` where ``factory(options)``
        returns a judge (``name``, ``description``, ``judge(inputs) -> verdicts``, one
        ``JudgeVerdict`` per ``JudgeInput``, in order, never raising for an odd response).

    Runs once per process in ``pytest_configure``, before the options are checked.
    """


@pytest.hookspec()
def pytest_guardbench_register_mutators(registry: MutatorRegistry) -> None:
    """Add stress variants to this run's registry, selectable in ``--guardbench-variants``.

    :param registry: a ``pytest_guardbench.cases.variants.MutatorRegistry``; call
        ``registry.add(pytest_guardbench.cases.mutators.Mutator(name, family, description, apply))``
        where ``apply(text, key)`` is a pure function (draw any randomness from ``key``, so every xdist
        worker writes the same text).
        A ``pytest_guardbench.cases.conversations.ConversationVariant(name, family, description, apply)``
        builds conversations instead: ``apply(turns, key)`` returns a script that ends with a user turn.
        A new family name becomes selectable as a family too.

    Runs once per process in ``pytest_configure``, before the cases are expanded.
    """


@pytest.hookspec()
def pytest_guardbench_summary(config: pytest.Config, summary: RunSummary, extensions: dict[str, Any]) -> None:
    """Add blocks of your own to the run summary before it is written.

    :param summary: the finished ``pytest_guardbench.results.frame.RunSummary`` (frozen: read it).
    :param extensions: put your blocks here, by name (JSON-ready values); they are written under
        ``extensions`` in summary.json and kept as they are by every reader.

    Runs once, on the controller, after scoring and the gate; the gate is not re-evaluated.
    """
