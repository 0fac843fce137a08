"""What the stack a project's settings name needs installed, for `guardbench init`'s CI example and
the models it installs: each role as the run will resolve it (the value init was given, else the
settings', else the plugin's default), read as a built-in unit, an API model or a local model."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_guardbench.providers.embedded import EmbeddedModel, needed_models
from pytest_guardbench.settings.config import Settings
from pytest_guardbench.settings.model_specs import model_aliases, parse_model_spec
from pytest_guardbench.settings.options import ConfigError
from pytest_guardbench.settings.starter import ROLES
from pytest_guardbench.settings.starter_source import SettingsSource, builds_a_package
from pytest_guardbench.settings.starter_workflow import StackNeeds

# The built-in units that need the `kb` extra's packages.
KB_UNITS = ("offline-kb",)


def resolved_stack(source: SettingsSource, stack: Mapping[str, str]) -> dict[str, str]:
    """Each role as a run in the folder will have it: given to init, else set in the settings, else
    the plugin's default."""
    table: Mapping[str, Any] = source.settings or {}
    resolved = {}
    for role in ROLES:
        value = stack.get(role, table.get(f"guardbench_{role}"))
        resolved[role] = value if isinstance(value, str) and value.strip() else Settings.model_fields[role].default
    return resolved


def embedded_models(roles: Mapping[str, str]) -> list[EmbeddedModel]:
    """The embedded model wheels these roles run."""
    return needed_models(roles["guardrail"], roles["tutor"], roles["judge"])


def stack_needs(folder: Path, roles: Mapping[str, str]) -> StackNeeds:
    """What a CI job installs and sets to run these roles in `folder`."""
    aliases = model_aliases(folder)
    wheels = embedded_models(roles)
    extras = {"hf"} if wheels else set()
    keys: list[str] = []
    hub = False
    for value in roles.values():
        if value in KB_UNITS:
            extras.add("kb")
        try:
            spec = parse_model_spec(value, aliases)
        except ConfigError:
            continue  # a spec the settings held already, and wrong: the collection says so, naming it
        if spec is None:
            continue  # a built-in unit, or one the project registers in conftest.py
        if spec.provider == "hf-local":
            extras.add("hf")
            hub = hub or not Path(folder, spec.model).exists()  # a hub id, not a local folder
        else:
            extras.add("openai")
            if spec.api_key_env and spec.api_key_env not in keys:
                keys.append(spec.api_key_env)
    return StackNeeds(
        extras=tuple(extra for extra in ("hf", "openai", "kb") if extra in extras),
        wheels=tuple(model.requirement for model in wheels),
        key_envs=tuple(keys),
        hub=hub,
        project=builds_a_package(folder),
    )
