"""The one interface every model transport implements, and its errors."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, NotRequired, Protocol, TypedDict, runtime_checkable

from pytest_guardbench.errors import GuardbenchError
from pytest_guardbench._util.counters import Counts
from pytest_guardbench._util.redact import redact
from pytest_guardbench.records import Completion


class Message(TypedDict):
    role: Literal["system", "user", "assistant"]
    content: str


class ProviderSettings(TypedDict):
    """`OpenAICompatProvider`'s keyword arguments for one model, built from its spec. Plain data with
    the key's variable name, never the key, so it crosses the pipe to a call process."""

    name: str
    model: str
    base_url: str | None
    api_key_env: str | None
    concurrency: NotRequired[int]
    timeout_s: NotRequired[float]
    max_retries: NotRequired[int]
    retry_backoff_s: NotRequired[float]
    extra_params: NotRequired[dict[str, Any] | None]  # the spec's `params`, as the user wrote them
    fleet: NotRequired[Sequence[str]]
    failures_to_drop: NotRequired[int]
    cooldown_s: NotRequired[float]
    structured: NotRequired[str]
    breaker_after: NotRequired[int]


# A local model's token limit when none is set (a local model has no server limit to fall back on).
DEFAULT_NEW_TOKENS = 64


@dataclass(frozen=True)
class GenerationParams:
    """Sampling for one batch. `seeds[i]` set means sample conversation i with that seed; None means greedy."""

    max_new_tokens: int | None = DEFAULT_NEW_TOKENS  # None: the server's own limit (API models only)
    temperature: float = 0.7
    # A JSON Schema (as JSON text, so the params stay hashable) the reply must follow, for servers with
    # structured output (OpenAI structured outputs, vLLM guided decoding, llama.cpp JSON schema).
    json_schema: str | None = None


class ProviderError(GuardbenchError, RuntimeError):
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


@dataclass(frozen=True)
class ClassifyRequest:
    """One guard-style call over a batch of conversations: render each with the model's own template
    and `template_kwargs`, generate up to `max_new_tokens` greedily, and read P(`label_words[0]`)
    against `label_words[1]` at the first non-blank generated token, or with `verdict_after` (e.g.
    `<score>`) at the first one after that text. A conversation given as a string is a prompt already
    in the model's own format (WildGuard's): a local model tokenizes it as it is, an API sends it as
    the one user message. Plain data, so it pickles across the call processes' pipe."""

    conversations: Sequence[list[Message] | str]
    template_kwargs: dict[str, object]
    label_words: tuple[str, str]
    max_new_tokens: int = 8
    verdict_after: str = ""

    def for_conversations(self, conversations: Sequence[list[Message] | str]) -> ClassifyRequest:
        """The same call over other conversations (a slice or the cache's misses)."""
        return replace(self, conversations=list(conversations))


@runtime_checkable
class ScoringChatModel(Protocol):
    """A chat model that renders with its own template (extra template kwargs allowed) and returns
    text plus a label probability from the same forward passes (see `ClassifyRequest`)."""

    model: str

    def classify(self, request: ClassifyRequest) -> list[Classification]: ...


class ModelAPI(ABC):
    """The base every model transport of the package derives from: `generate` is required, the
    rest have defaults, so callers never probe with getattr. A tutor registered by a conftest may be
    any `ChatProvider`; `as_model_api` gives it the defaults."""

    name: str
    model: str

    @abstractmethod
    def generate(
        self,
        conversations: Sequence[list[Message]],
        params: GenerationParams,
        seeds: Sequence[int | None],
    ) -> list[Completion]: ...

    def classify(self, request: ClassifyRequest) -> list[Classification]:
        raise ProviderError(f"{self.name}: {self.model} gives no label probabilities (use it as a text guard)")

    def moderate(self, texts: Sequence[str]) -> list[object]:
        raise ProviderError(f"{self.name}: {self.model} has no moderation endpoint (use it with another adapter)")

    def stats(self) -> Counts:
        """Call counters for `summary.json` (`run.execution.api_calls`); none by default."""
        return {}

    def close(self) -> None:
        """Release connections, threads or processes; nothing by default."""

    @property
    def cache_identity(self) -> str:
        """What the response cache keys this model's answers by. The default (class, name, model)
        suits a model whose answers depend on nothing else; override it otherwise."""
        return f"{type(self).__module__}.{type(self).__qualname__}|{self.name}|{self.model}"


class _PlainProvider(ModelAPI):
    """A `ChatProvider` from outside the package (a conftest's tutor) with the ModelAPI defaults."""

    def __init__(self, inner: ChatProvider) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model

    def generate(
        self, conversations: Sequence[list[Message]], params: GenerationParams, seeds: Sequence[int | None]
    ) -> list[Completion]:
        return self.inner.generate(conversations, params, seeds)

    @property
    def cache_identity(self) -> str:
        own = getattr(self.inner, "cache_identity", None)  # the one place an outside provider is probed
        if isinstance(own, str) and own:
            return own
        kind = type(self.inner)
        return f"{kind.__module__}.{kind.__qualname__}|{self.name}|{self.model}"


def as_model_api(provider: ChatProvider | ModelAPI) -> ModelAPI:
    return provider if isinstance(provider, ModelAPI) else _PlainProvider(provider)


@runtime_checkable
class Embedder(Protocol):
    """Unit-length sentence embeddings."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...
