"""The one interface every model transport implements, and its errors."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, TypedDict, runtime_checkable

from pytest_guardbench.redact import redact


class Message(TypedDict):
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class Completion:
    text: str
    model: str
    finish_reason: str | None = None
    completion_tokens: int | None = None
    prompt_tokens: int | None = None
    latency_s: float | None = None


@dataclass(frozen=True)
class GenerationParams:
    """Sampling for one batch. `seeds[i]` set means sample conversation i with that seed; None means greedy."""

    max_new_tokens: int = 64
    temperature: float = 0.7
    # A JSON Schema (as JSON text, so the params stay hashable) the reply must follow, for servers with
    # structured output (OpenAI structured outputs, vLLM guided decoding, llama.cpp JSON schema).
    json_schema: str | None = None


@dataclass(frozen=True)
class ProviderOptions:
    """What the plugin passes to every provider factory."""

    model_cache: Path
    batch_size: int = 8
    torch_threads: int | None = None
    batch_state_dir: Path | None = None  # where Batch API runs keep their batch ids


class ProviderError(RuntimeError):
    """A model call failed; the pipeline records it as an error, never as a verdict. Its text is
    redacted, since it quotes what servers say and a server may quote the key it was sent."""

    def __init__(self, message: str) -> None:
        super().__init__(redact(message))


class CacheMiss(ProviderError):
    """Raised only while answers may come from the response cache alone (`ResponseCache.cached_only`):
    the call was not cached and no model was asked. The case is then run the normal way."""


@runtime_checkable
class ChatProvider(Protocol):
    """Generates one completion per conversation, in order."""

    name: str
    model: str

    def generate(
        self,
        conversations: Sequence[list[Message]],
        params: GenerationParams,
        seeds: Sequence[int | None],
    ) -> list[Completion]: ...


@dataclass(frozen=True)
class Classification:
    """Greedy short output of a classifier-style chat model and P(first label word) at the first
    non-blank generated position (softmax over the two label words' token mass)."""

    text: str
    p_first: float | None


@runtime_checkable
class ScoringChatModel(Protocol):
    """A local chat model that renders with its own template (extra template kwargs allowed) and
    returns text plus a label probability from the same forward passes."""

    model: str

    def classify(
        self,
        conversations: Sequence[list[Message]],
        template_kwargs: dict[str, Any],
        label_words: tuple[str, str],
        max_new_tokens: int = 8,
    ) -> list[Classification]: ...


@runtime_checkable
class Embedder(Protocol):
    """Unit-length sentence embeddings."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...
