"""The one interface every model transport implements, and its errors."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, TypedDict, runtime_checkable


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


@dataclass(frozen=True)
class ProviderOptions:
    """What the plugin passes to every provider factory."""

    model_cache: Path
    batch_size: int = 8
    torch_threads: int | None = None


class ProviderError(RuntimeError):
    """A model call failed; the pipeline records it as an error, never as a verdict."""


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
