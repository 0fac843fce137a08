"""Hooks that conftest files and plugins implement to extend guardbench."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookspec()
def pytest_guardbench_register_providers(registry: Any) -> None:
    """Add tutor providers to this run's registry.

    :param registry: a ``pytest_guardbench.providers.ProviderRegistry``; call
        ``registry.register(name, factory, description)`` where ``factory(options)`` returns a
        ``ChatProvider``. Heavy imports belong inside the factory.

    Runs once per process in ``pytest_configure``. Use it from a root ``conftest.py`` or a plugin.
    """


@pytest.hookspec()
def pytest_guardbench_summary(config: pytest.Config, summary: dict[str, Any]) -> None:
    """Amend the run summary (a JSON-ready dict) before it is written to summary.json.

    Runs once, on the controller, after scoring and the gate. Changes to the gate result are not
    re-evaluated.
    """
