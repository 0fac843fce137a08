"""OpenAI and any OpenAI-compatible server (vLLM, Ollama, llama.cpp server, Scaleway) through the
official `openai` async client. The only module that imports `openai`."""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import SecretStr

from pytest_guardbench.providers.base import Classification, Completion, GenerationParams, Message, ProviderError


@dataclass(frozen=True)
class _Reply:
    text: str
    model: str
    finish_reason: str | None
    completion_tokens: int | None
    prompt_tokens: int | None
    latency_s: float
    logprobs: Any = None

    def completion(self) -> Completion:
        return Completion(self.text, self.model, self.finish_reason, self.completion_tokens, self.prompt_tokens, self.latency_s)


class OpenAICompatProvider:
    """Chat completions against `base_url`. The key is read from the named env var and kept as a
    SecretStr; neither repr nor errors nor records ever contain it."""

    def __init__(
        self,
        name: str,
        model: str,
        base_url: str | None,
        api_key_env: str | None,
        *,
        concurrency: int = 8,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        extra_params: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        key = os.environ.get(api_key_env, "") if api_key_env else ""
        if api_key_env and not key:
            raise ProviderError(f"{name}: environment variable {api_key_env} is not set")
        # Servers without auth (a local vLLM) still need a non-empty key for the client.
        self._api_key = SecretStr(key or "not-needed")
        self._concurrency = max(1, concurrency)
        self._timeout_s = timeout_s
        self._max_retries = max_retries
        self._extra = dict(extra_params or {})

    def __repr__(self) -> str:
        return f"OpenAICompatProvider(name={self.name!r}, model={self.model!r}, base_url={self.base_url!r}, api_key_env={self.api_key_env!r})"

    def generate(
        self,
        conversations: Sequence[list[Message]],
        params: GenerationParams,
        seeds: Sequence[int | None],
    ) -> list[Completion]:
        """Send every conversation concurrently (bounded) and return completions in order.

        Raises ProviderError for the first failed call; the pipeline then retries cases one by
        one so a single bad case does not take the batch with it.
        """
        async def run() -> list[Completion]:
            replies = await self._run_all(list(conversations), params, list(seeds), None)
            return [r.completion() for r in replies]

        return asyncio.run(run())

    async def _run_all(
        self, conversations: list[list[Message]], params: GenerationParams, seeds: list[int | None], extra: dict[str, Any] | None
    ) -> list[_Reply]:
        from openai import AsyncOpenAI

        client = AsyncOpenAI(
            api_key=self._api_key.get_secret_value(),
            base_url=self.base_url,
            timeout=self._timeout_s,
            max_retries=self._max_retries,
        )
        limit = asyncio.Semaphore(self._concurrency)

        async def one(conversation: list[Message], seed: int | None) -> _Reply:
            async with limit:
                return await self._complete(client, conversation, params, seed, extra)

        try:
            return list(await asyncio.gather(*(one(c, s) for c, s in zip(conversations, seeds, strict=True))))
        finally:
            await client.close()

    def classify(
        self,
        conversations: Sequence[list[Message]],
        template_kwargs: dict[str, Any],
        label_words: tuple[str, str],
        max_new_tokens: int = 8,
    ) -> list[Classification]:
        """Guard-style call: template kwargs go to the server's chat template (vLLM's
        `chat_template_kwargs`), the label probability comes from the returned logprobs."""
        extra = {"logprobs": True, "top_logprobs": 20}
        if template_kwargs:
            extra["extra_body"] = {"chat_template_kwargs": template_kwargs}
        params = GenerationParams(max_new_tokens=max_new_tokens)

        async def run() -> list[Classification]:
            completions = await self._run_all(list(conversations), params, [None] * len(conversations), extra)
            return [Classification(text=c.text, p_first=_label_probability(c.logprobs, label_words)) for c in completions]

        return asyncio.run(run())

    async def _complete(
        self, client: Any, conversation: list[Message], params: GenerationParams, seed: int | None, extra: dict[str, Any] | None = None
    ) -> _Reply:
        import openai

        request: dict[str, Any] = {
            "model": self.model,
            "messages": conversation,
            "max_tokens": params.max_new_tokens,
            "temperature": params.temperature if seed is not None else 0.0,
            **self._extra,
            **(extra or {}),
        }
        if seed is not None:
            request["seed"] = seed
        started = time.perf_counter()
        try:
            response = await client.chat.completions.create(**request)
        except openai.APIStatusError as exc:
            raise ProviderError(f"{self.name}: HTTP {exc.status_code} from the server: {_short(exc.message)}") from None
        except openai.APITimeoutError:
            raise ProviderError(f"{self.name}: timed out after {self._timeout_s:g} s") from None
        except openai.APIConnectionError as exc:
            raise ProviderError(f"{self.name}: cannot connect to {self.base_url or 'the API'}: {_short(str(exc))}") from None
        except openai.OpenAIError as exc:
            raise ProviderError(f"{self.name}: {type(exc).__name__}: {_short(str(exc))}") from None
        except ValueError as exc:  # the client surfaces an undecodable body as a JSON error
            raise ProviderError(f"{self.name}: the server sent an invalid response body ({_short(str(exc))})") from None
        if not getattr(response, "choices", None):
            raise ProviderError(f"{self.name}: the server returned no choices")
        choice = response.choices[0]
        text = choice.message.content
        if text is None:
            raise ProviderError(f"{self.name}: the server returned an empty message (finish_reason={choice.finish_reason})")
        usage = getattr(response, "usage", None)
        return _Reply(
            logprobs=getattr(choice, "logprobs", None),
            text=text.strip(),
            model=getattr(response, "model", None) or self.model,
            finish_reason=choice.finish_reason,
            completion_tokens=getattr(usage, "completion_tokens", None),
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            latency_s=round(time.perf_counter() - started, 4),
        )


def _label_probability(logprobs: Any, label_words: tuple[str, str]) -> float | None:
    """P(label_words[0]) against label_words[1] from the top logprobs at the first non-blank
    generated position (mass of every spelling of each word; both sums start at 1e-50)."""
    content = getattr(logprobs, "content", None) or []
    for position in content:
        if not str(position.token).strip():
            continue
        first, second = 1e-50, 1e-50
        for candidate in position.top_logprobs or []:
            word = str(candidate.token).strip().lower()
            if word == label_words[0].lower():
                first += math.exp(candidate.logprob)
            elif word == label_words[1].lower():
                second += math.exp(candidate.logprob)
        return round(first / (first + second), 6)
    return None


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
