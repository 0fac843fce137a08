"""Models reached by name: the alias table (`[tool.guardbench.models.<alias>]` and the built-in
aliases), `openai:<model>` / `vllm:<model>@<url>` specs, the price table, and the pyproject readers
they share. A spec holds the *name* of its key's variable, never a key."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from pytest_guardbench.settings.options import ConfigError

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

PYPROJECT_TABLES = ("models", "prices", "thresholds")


def _pyproject_guardbench(root: Path) -> dict[str, Any]:
    import tomllib

    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return {}
    try:
        document = tomllib.loads(pyproject.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{pyproject}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"{pyproject}: cannot read ({exc.strerror or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{pyproject}: invalid TOML ({exc})") from None
    tool = document.get("tool", {})
    table = tool.get("guardbench", {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict):
        raise ConfigError(f"{pyproject}: tool.guardbench must be a table ([tool.guardbench.<table>])")
    unknown = sorted(set(table) - set(PYPROJECT_TABLES))
    if unknown:
        # A misspelt table (`threshold` for `thresholds`) would otherwise be ignored without a word.
        raise ConfigError(
            f"{pyproject}: [tool.guardbench.{unknown[0]}] is not a known table; known: {', '.join(PYPROJECT_TABLES)}"
        )
    for name, value in table.items():
        if not isinstance(value, dict):
            # `[[tool.guardbench.models]]` (an array of tables) or `models = ...` (a value).
            shape = "an array of tables ([[...]])" if isinstance(value, list) else "a value"
            raise ConfigError(
                f"{pyproject}: tool.guardbench.{name} is {shape}; write one table per name: "
                f"[tool.guardbench.{name}.<name>]"
            )
    return table


THRESHOLD_SCOPES = ("variant", "category", "turn")


def pyproject_thresholds(root: Path) -> dict[str, dict[str, Any]]:
    """`[tool.guardbench.thresholds.variant.<name>]`, `[tool.guardbench.thresholds.category.<name>]` and
    `[tool.guardbench.thresholds.turn.<depth>]`."""
    table = _pyproject_guardbench(root).get("thresholds", {})
    unknown = sorted(set(table) - set(THRESHOLD_SCOPES))
    if unknown:
        raise ConfigError(
            f"{root / 'pyproject.toml'}: [tool.guardbench.thresholds.{unknown[0]}]: use thresholds.variant.<name>, "
            "thresholds.category.<name> or thresholds.turn.<depth>"
        )
    for kind, scope in table.items():
        if not isinstance(scope, dict):
            raise ConfigError(
                f"{root / 'pyproject.toml'}: tool.guardbench.thresholds.{kind} must be tables: "
                f"[tool.guardbench.thresholds.{kind}.<{'depth' if kind == 'turn' else 'name'}>]"
            )
    return {kind: dict(table.get(kind, {})) for kind in THRESHOLD_SCOPES}


def price_table(root: Path) -> dict[str, dict[str, float]]:
    """`[tool.guardbench.prices."<model as the server reports it>"]` with `input_per_million` and
    `output_per_million` in USD."""
    table = _pyproject_guardbench(root).get("prices", {})
    prices: dict[str, dict[str, float]] = {}
    for model, entry in table.items():
        if not isinstance(entry, dict) or set(entry) - {"input_per_million", "output_per_million"} or not entry:
            raise ConfigError(
                f'{root / "pyproject.toml"}: [tool.guardbench.prices."{model}"] takes input_per_million and '
                "output_per_million"
            )
        for key, value in entry.items():
            if not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value < math.inf:
                raise ConfigError(
                    f'{root / "pyproject.toml"}: [tool.guardbench.prices."{model}"] {key}: must be a finite number >= 0'
                )
        prices[model] = {k: float(v) for k, v in entry.items()}
    return prices


def default_model_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pytest-guardbench" / "models"


class GuardAdapterSettings(BaseModel):
    """How a guard model's input is built and its output read (see pytest_guardbench/guards/). Written
    flat in an alias's table, beside the transport settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    adapter: Literal[
        "generic", "granite-guardian", "llama-guard", "wildguard", "shieldgemma", "nemotron-safety", "openai-moderation"
    ] = "generic"
    risks: tuple[str, ...] | None = None  # Granite: risks that block (default harm); ShieldGemma: policies
    prompt_format: str | None = None  # WildGuard: the input format, with {prompt} and {response}
    observe_risks: tuple[str, ...] = ()  # Granite Guardian: risks only recorded
    risk_definitions: dict[str, str] = Field(default_factory=dict)  # custom Granite risks, ShieldGemma guidelines
    granite_version: Literal["3.0", "3.1", "3.2", "3.3"] | None = None  # None: read from the model id
    think: bool = False  # Granite Guardian 3.3: a reasoning trace before the score
    decoding: Literal["generate", "logits"] = "generate"  # Granite on hf-local: generate text, or one forward pass
    block_threshold: float = Field(default=0.5, ge=0, le=1)  # Granite with decoding = "logits"


GUARD_KEYS = frozenset(GuardAdapterSettings.model_fields)


class ModelSpec(BaseModel):
    """A model and how it is reached (an OpenAI-compatible API, or a local transformers model), plus
    the guard-adapter settings when it serves as a guard. Holds the *name* of the key's env var,
    never a key. The alias table is flat; the guard keys land in `guard`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    alias: str
    provider: Literal["openai-compat", "hf-local"] = "openai-compat"
    model: str  # model id on the server, or for hf-local a local folder / a hub id already in the local cache
    guard: GuardAdapterSettings = Field(default_factory=GuardAdapterSettings)
    device: str = "cpu"  # hf-local only
    dtype: str = "float32"  # hf-local only
    trust_remote_code: bool = False  # hf-local only; off unless a project asks for it
    base_url: str | None = None
    base_url_env: str | None = None  # e.g. OPENAI_BASE_URL: read at build time, overrides nothing else
    fleet: tuple[str, ...] = ()  # several replicas of the same model (vLLM behind no balancer); replaces base_url
    failures_to_drop: int = Field(default=3, ge=1)  # a replica failing this many calls in a row is taken out
    breaker_after: int = Field(
        default=5, ge=0
    )  # this many calls in a row failing the same way stop the model's calls; 0: never
    cooldown_s: float = Field(default=30.0, ge=0)  # ... for this long, then tried again
    batch_api: bool = False  # send each stage's calls through the provider's Batch API (files + batches)
    batch_poll_s: float = Field(default=10.0, gt=0)
    batch_completion_window: str = "24h"
    api_key_env: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    # Ask for JSON-schema output where a call has a schema (the LLM judge): auto falls back to plain text
    # when the server rejects it, on fails the call, off never asks.
    structured: Literal["auto", "on", "off"] = "auto"
    concurrency: int | None = Field(default=None, ge=1)  # None: --guardbench-concurrency, else 8
    processes: int | None = Field(default=None, ge=1)  # None: the run's call processes (--guardbench-api-processes)
    timeout_s: float | None = Field(default=None, gt=0)  # None: --guardbench-timeout, else 60
    max_retries: int | None = Field(default=None, ge=0)  # None: --guardbench-retries, else 3
    retry_backoff_s: float = Field(default=0.5, ge=0)

    @field_validator("api_key_env", "base_url_env")
    @classmethod
    def _an_environment_variable_name(cls, value: str | None) -> str | None:
        # The value is never echoed: what stands here by mistake is most often the key itself.
        if value is not None and not ENV_NAME.fullmatch(value):
            raise ConfigError(
                "must be the NAME of an environment variable (letters, digits, _), e.g. OPENAI_API_KEY, "
                "not its value; the value written here is not shown, in case it is a key"
            )
        return value

    @model_validator(mode="before")
    @classmethod
    def _nest_guard_keys(cls, data: Any) -> Any:
        if isinstance(data, dict) and GUARD_KEYS & data.keys():
            nested = dict(data.get("guard") or {})
            nested.update({k: v for k, v in data.items() if k in GUARD_KEYS})
            data = {**{k: v for k, v in data.items() if k not in GUARD_KEYS}, "guard": nested}
        return data

    def flat_dump(self) -> dict[str, Any]:
        """The spec as its alias table writes it (guard keys beside the transport ones)."""
        return {**self.model_dump(exclude={"guard"}), **self.guard.model_dump()}

    def resolved_base_url(self) -> str | None:
        if self.base_url_env and os.environ.get(self.base_url_env):
            return os.environ[self.base_url_env]
        return self.base_url

    def missing_key(self) -> str | None:
        """The env var that must hold the key but is empty, if any."""
        if self.api_key_env and not os.environ.get(self.api_key_env):
            return self.api_key_env
        return None


BUILTIN_MODEL_ALIASES: dict[str, dict[str, Any]] = {
    "granite": {
        "provider": "hf-local",
        "model": "ibm-granite/granite-guardian-3.2-3b-a800m",
        "adapter": "granite-guardian",
    },
    "llama-guard-3": {"provider": "hf-local", "model": "meta-llama/Llama-Guard-3-1B", "adapter": "llama-guard"},
    "wildguard": {"provider": "hf-local", "model": "allenai/wildguard", "adapter": "wildguard"},
    "shieldgemma": {"provider": "hf-local", "model": "google/shieldgemma-2b", "adapter": "shieldgemma"},
    "nemotron-safety": {
        "provider": "hf-local",
        "model": "nvidia/Llama-3.1-Nemotron-Safety-Guard-8B-v3",
        "adapter": "nemotron-safety",
    },
    "openai-moderation": {
        "model": "omni-moderation-latest",
        "base_url_env": "OPENAI_BASE_URL",
        "api_key_env": "OPENAI_API_KEY",
        "adapter": "openai-moderation",
    },
    "llama": {
        "model": "llama-3.1-8b-instruct",
        "base_url": "https://api.scaleway.ai/v1",
        "api_key_env": "SCW_SECRET_KEY",
    },
    "gpt-4o-mini": {"model": "gpt-4o-mini", "base_url_env": "OPENAI_BASE_URL", "api_key_env": "OPENAI_API_KEY"},
}


def model_aliases(root: Path) -> dict[str, ModelSpec]:
    """Built-in aliases, extended or overridden by `[tool.guardbench.models.<alias>]` in pyproject.toml."""
    table: dict[str, dict[str, Any]] = {name: dict(entry) for name, entry in BUILTIN_MODEL_ALIASES.items()}
    pyproject = root / "pyproject.toml"
    for name, entry in _pyproject_guardbench(root).get("models", {}).items():
        if not isinstance(entry, dict):
            raise ConfigError(f"{pyproject}: [tool.guardbench.models.{name}] must be a table")
        if "alias" in entry:
            raise ConfigError(f"{pyproject}: [tool.guardbench.models.{name}] alias: the table's name is the alias")
        table[name] = dict(entry)
    specs = {}
    for name, entry in table.items():
        try:
            specs[name] = ModelSpec.model_validate({**entry, "alias": name})
        except ValidationError as exc:
            first = exc.errors()[0]
            raise ConfigError(
                f"{pyproject}: [tool.guardbench.models.{name}] "
                f"{'.'.join(map(str, first['loc'][first['loc'][:1] == ('guard',) :]))}: {first['msg']}"
            ) from None
    return specs


def parse_model_spec(text: str, aliases: dict[str, ModelSpec]) -> ModelSpec | None:
    """An alias, `openai:<model>` (OPENAI_API_KEY, OPENAI_BASE_URL) or `vllm:<model>@<base-url>`
    (no key, or the env var named by `?key=ENV`); None when the text is none of these."""
    if text in aliases:
        return aliases[text]
    if text.startswith("openai:") and len(text) > len("openai:"):
        return ModelSpec(
            alias=text, model=text.split(":", 1)[1], base_url_env="OPENAI_BASE_URL", api_key_env="OPENAI_API_KEY"
        )
    if text.startswith("vllm:") and "@" in text:
        model, _, url = text[len("vllm:") :].rpartition("@")
        key_env = None
        if "?key=" in url:
            url, _, key_env = url.partition("?key=")
            if not ENV_NAME.fullmatch(key_env):
                raise ConfigError(
                    "vllm:<model>@<url>?key=ENV takes the NAME of the environment variable that holds the key, "
                    "not the key; the value written there is not shown"
                )
        urls = [u.strip() for u in url.split(",") if u.strip()]
        if not model or not urls or not all(u.startswith(("http://", "https://")) for u in urls):
            raise ConfigError(f"{text!r}: expected vllm:<model>@<http(s)-base-url>[,<another replica's url>...]")
        return ModelSpec(
            alias=text,
            model=model,
            base_url=urls[0],
            fleet=tuple(urls) if len(urls) > 1 else (),
            api_key_env=key_env or None,
        )
    return None
