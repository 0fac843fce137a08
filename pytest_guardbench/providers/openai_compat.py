"""OpenAI and any OpenAI-compatible server (vLLM, Ollama, llama.cpp server, Scaleway) through the
official `openai` async client. One of the three modules that import `openai`, with
providers/transport.py (which maps its errors) and providers/batch_api.py (its Batch API); each imports
it inside the functions that use it.

Each provider owns one event loop in a daemon thread and one client on it, so calls from many
pipeline threads share a connection pool and one adaptive in-flight limit."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import random
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any

from pydantic import SecretStr

from pytest_guardbench._util.counters import Counts
from pytest_guardbench._util.redact import treat_as_key
from pytest_guardbench.providers.base import (
    Classification,
    ClassifyRequest,
    Completion,
    GenerationParams,
    Message,
    ModelAPI,
    ProviderError,
)
from pytest_guardbench.providers.limits import AdaptiveLimit, RetryPolicy
from pytest_guardbench.providers.transport import (
    http_client,
    mapped_error,
    CircuitOpen,
    Endpoint,
    LoopThread,
    Reply,
    Retryable,
    T,
    Fleet,
    call_key,
    chat_request,
    failure_kind,
    label_probability,
    reply_from,
    short,
)


class OpenAICompatProvider(ModelAPI):
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
        max_retries: int = 3,
        retry_backoff_s: float = 0.5,
        extra_params: Mapping[str, object] | None = None,
        fleet: Sequence[str] = (),
        failures_to_drop: int = 3,
        cooldown_s: float = 30.0,
        structured: str = "auto",
        breaker_after: int = 5,
        loop: LoopThread | None = None,
    ) -> None:
        self.name = name
        self.model = model
        # A fleet is several replicas of the same model; `concurrency` applies to each of them.
        urls: list[str | None] = list(dict.fromkeys(fleet)) or [base_url]
        self.base_url = urls[0]
        self.api_key_env = api_key_env
        treat_as_key([api_key_env])  # whatever it is called, the variable holds a key: redacted from now on
        key = os.environ.get(api_key_env, "") if api_key_env else ""
        if api_key_env and not key:
            raise ProviderError(f"{name}: environment variable {api_key_env} is not set")
        # Servers without auth (a local vLLM) still need a non-empty key for the client.
        self._api_key = SecretStr(key or "not-needed")
        self.endpoints = [Endpoint(url, AdaptiveLimit(max(1, concurrency))) for url in urls]
        self.fleet = Fleet(self.endpoints, max(1, failures_to_drop), cooldown_s)
        self.concurrency = max(1, concurrency) * len(self.endpoints)
        self._timeout_s = timeout_s
        self._retry = RetryPolicy(max_retries=max_retries, backoff_s=retry_backoff_s)
        self._extra = dict(extra_params or {})
        # "auto": ask for structured output when a call carries a schema, and stop asking the first
        # time the server rejects it; "on": a rejection fails the call; "off": never ask.
        self._structured = structured
        self.structured_rejected: str | None = None
        self._rng = random.Random()
        self._runner: LoopThread | None = None
        # A loop shared with other providers (a call process's models): theirs to stop, not this one's.
        self._shared_loop = loop
        self._start_lock = threading.Lock()
        self._closed = False
        self.calls = 0
        self.retries = 0
        self.rate_limited = 0
        # Circuit breaker: after this many calls in a row fail the same way (each after its retries),
        # the server is taken as down or misconfigured and the remaining calls fail at once.
        self._breaker_after = breaker_after
        self._failed_in_a_row: tuple[str, int] = ("", 0)
        self.breaker_open: str | None = None
        self.calls_not_sent = 0
        # Outcomes of a batch that failed, kept for the case-by-case rerun the pipeline makes next, so
        # an answered call is not sent again and a failed one is not retried a second round.
        self._settled: dict[str, Reply | BaseException] = {}

    def __repr__(self) -> str:
        urls = [e.url for e in self.endpoints]
        where = f"base_url={urls[0]!r}" if len(urls) == 1 else f"fleet={urls!r}"
        return (
            f"OpenAICompatProvider(name={self.name!r}, model={self.model!r}, {where}, api_key_env={self.api_key_env!r})"
        )

    @property
    def cache_identity(self) -> str:
        urls = ",".join(sorted(e.url or "https://api.openai.com/v1" for e in self.endpoints))
        structured = "" if self._structured == "auto" else f"|structured={self._structured}"
        return f"openai-compat|{urls}|{self.model}|{sorted(self._extra.items())!r}{structured}"

    def stats(self) -> Counts:
        result: Counts = {"calls": self.calls, "retries": self.retries, "rate_limited": self.rate_limited}
        if self.breaker_open:
            result["circuit_breaker"] = {"reason": self.breaker_open, "calls_not_sent": self.calls_not_sent}
        if self.structured_rejected:
            result["structured_output_rejected"] = self.structured_rejected
        result["lowest_concurrency"] = min(e.limit.lowest for e in self.endpoints)
        if len(self.endpoints) > 1:
            result["endpoints"] = {str(e.url): e.stats() for e in self.endpoints}
        return result

    def _run(self, coroutine: Coroutine[object, None, T]) -> T:
        return self.start(coroutine).result()

    def start(self, coroutine: Coroutine[object, None, T]) -> concurrent.futures.Future[T]:
        """Run one of this provider's coroutines (`generate_async`, `classify_async`) on its own loop."""
        with self._start_lock:
            if self._closed:
                coroutine.close()
                raise ProviderError(f"{self.name}: not sent, the run is shutting down")
            if self._runner is None:
                self._runner = self._shared_loop or LoopThread(self.name)
        return asyncio.run_coroutine_threadsafe(coroutine, self._runner.loop)

    def close(self) -> None:
        with self._start_lock:
            self._closed = True
        runner, self._runner = self._runner, None
        if runner is None:
            return
        if runner is not self._shared_loop:
            runner.cancel_pending()
        for endpoint in self.endpoints:
            if endpoint.client is not None:
                runner.run(endpoint.client.close())
                endpoint.client = None
        if runner is not self._shared_loop:
            runner.stop()

    def generate(
        self,
        conversations: Sequence[list[Message]],
        params: GenerationParams,
        seeds: Sequence[int | None],
    ) -> list[Completion]:
        """Send every conversation concurrently (bounded) and return completions in order.

        Raises ProviderError for the first call that still fails after its retries; the pipeline
        then runs cases one by one so a single bad case does not take the batch with it.
        """
        return self._run(self.generate_async(conversations, params, seeds))

    async def generate_async(
        self, conversations: Sequence[list[Message]], params: GenerationParams, seeds: Sequence[int | None]
    ) -> list[Completion]:
        replies = await self._run_all(list(conversations), params, list(seeds), None)
        return [r.completion for r in replies]

    async def _run_all(
        self,
        conversations: list[list[Message]],
        params: GenerationParams,
        seeds: list[int | None],
        extra: Mapping[str, object] | None,
    ) -> list[Reply]:
        self._ensure_clients()
        calls = list(zip(conversations, seeds, strict=True))
        outcomes = await asyncio.gather(
            *(self._call_once(c, params, s, extra) for c, s in calls), return_exceptions=True
        )
        failed = [o for o in outcomes if isinstance(o, BaseException)]
        if not failed:
            return list(outcomes)  # type: ignore[arg-type]
        if len(calls) > 1:
            self._settled.update((call_key(c, params, s, extra), o) for (c, s), o in zip(calls, outcomes, strict=True))
        raise failed[0]

    async def _call_once(
        self,
        conversation: list[Message],
        params: GenerationParams,
        seed: int | None,
        extra: Mapping[str, object] | None,
    ) -> Reply:
        # Only a group that failed leaves outcomes behind: the hot path does not build a key.
        kept = self._settled.pop(call_key(conversation, params, seed, extra), None) if self._settled else None
        if isinstance(kept, BaseException):
            raise kept
        if kept is not None:
            return kept
        try:
            reply = await self._with_retries(
                lambda endpoint: self._complete(endpoint, conversation, params, seed, extra)
            )
        except CircuitOpen:
            raise
        except ProviderError as exc:
            self._count_failure(str(exc))
            raise
        self._failed_in_a_row = ("", 0)
        return reply

    def _count_failure(self, message: str) -> None:
        kind = failure_kind(message)
        previous, count = self._failed_in_a_row
        count = count + 1 if kind == previous else 1
        self._failed_in_a_row = (kind, count)
        if self._breaker_after and count >= self._breaker_after and self.breaker_open is None:
            self.breaker_open = (
                f"circuit breaker open: {count} calls in a row failed with {kind} (last: {message}); "
                "the rest of this model's calls fail without being sent"
            )

    def _ensure_clients(self) -> None:
        """One client per endpoint, created on the provider's own loop (its connections live there)."""
        for endpoint in self.endpoints:
            if endpoint.client is None:
                from openai import AsyncOpenAI

                # Retries are ours (below): the client's own would hide rate limits from the adaptive limit.
                endpoint.client = AsyncOpenAI(
                    api_key=self._api_key.get_secret_value(),
                    base_url=endpoint.url,
                    timeout=self._timeout_s,
                    max_retries=0,
                    http_client=http_client(),
                )

    def classify(self, request: ClassifyRequest) -> list[Classification]:
        """Guard-style call: template kwargs go to the server's chat template (vLLM's
        `chat_template_kwargs`), the label probability comes from the returned logprobs."""
        return self._run(self.classify_async(request))

    async def classify_async(self, request: ClassifyRequest) -> list[Classification]:
        extra: dict[str, Any] = {"logprobs": True, "top_logprobs": 20}
        if request.template_kwargs:
            extra["chat_template_kwargs"] = request.template_kwargs
        params = GenerationParams(max_new_tokens=request.max_new_tokens)
        messages: list[list[Message]] = [
            [{"role": "user", "content": c}] if isinstance(c, str) else c for c in request.conversations
        ]
        replies = await self._run_all(messages, params, [None] * len(messages), extra)
        return [
            Classification(
                text=r.completion.text,
                p_first=label_probability(r.logprobs, request.label_words, request.verdict_after),
            )
            for r in replies
        ]

    async def _with_retries(self, send: Callable[[Endpoint], Awaitable[T]]) -> T:
        last = ""
        endpoint: Endpoint | None = None
        for attempt in range(1, self._retry.attempts + 1):
            endpoint = await self.fleet.slot(avoid=endpoint)
            if self.breaker_open:  # checked with the slot held: calls queued behind the failing ones stop here
                await endpoint.limit.__aexit__(None, None, None)
                self.calls_not_sent += 1
                raise CircuitOpen(f"{self.name}: not sent, {self.breaker_open}")
            try:
                self.calls += 1
                endpoint.calls += 1
                try:
                    reply = await send(endpoint)
                except Retryable as exc:
                    last = str(exc)
                    self.fleet.failed(endpoint)
                    if exc.rate_limited:
                        self.rate_limited += 1
                        endpoint.limit.rate_limited()
                    retry_after = exc.retry_after
                else:
                    endpoint.failures_in_a_row = 0
                    await endpoint.limit.succeeded()
                    return reply
            finally:
                await endpoint.limit.__aexit__(None, None, None)
            if attempt < self._retry.attempts:
                self.retries += 1
                # Another replica can take the retry at once; the same server gets time to recover.
                if self.fleet.pick(avoid=endpoint) is endpoint:
                    await asyncio.sleep(self._retry.delay(attempt, retry_after, self._rng))
        raise ProviderError(f"{last} (gave up after {self._retry.attempts} attempts)")

    def _request(
        self,
        conversation: list[Message],
        params: GenerationParams,
        seed: int | None,
        extra: Mapping[str, object] | None,
    ) -> dict[str, Any]:
        return chat_request(
            self.model, conversation, params, seed, {**self._extra, **(extra or {})}, self._asks_structured(params)
        )

    def _asks_structured(self, params: GenerationParams) -> bool:
        return params.json_schema is not None and self._structured != "off" and self.structured_rejected is None

    async def _complete(
        self,
        endpoint: Endpoint,
        conversation: list[Message],
        params: GenerationParams,
        seed: int | None,
        extra: Mapping[str, object] | None,
    ) -> Reply:
        import openai

        started = time.perf_counter()
        structured = self._asks_structured(params)
        try:
            # The client's generic `post` with a plain-dict result: the typed `chat.completions.create`
            # spends about a third more CPU per call transforming the request and building pydantic
            # objects, which bounds many concurrent short calls (bench/bench_engine_api.py).
            response = await endpoint.client.post(
                "/chat/completions", body=self._request(conversation, params, seed, extra), cast_to=dict
            )
        except openai.APIStatusError as exc:
            if structured and exc.status_code in (400, 422):
                message = f"{self.name}: HTTP {exc.status_code} from the server: {short(exc.message)}"
                if self._structured == "on":
                    raise ProviderError(
                        f"{message} (the request asked for structured output; "
                        'set structured = "auto" or "off" for this model)'
                    ) from None
                self.structured_rejected = message  # the parse ladder and repair call take over from here
                return await self._complete(endpoint, conversation, params, seed, extra)
            raise self._mapped(exc, endpoint) from None
        except (openai.OpenAIError, ValueError) as exc:
            raise self._mapped(exc, endpoint) from None
        return reply_from(response, self.name, self.model, time.perf_counter() - started)

    def _mapped(self, exc: Exception, endpoint: Endpoint) -> Exception:
        return mapped_error(exc, self.name, endpoint.url or "the API", self._timeout_s)

    # -- the moderation endpoint (OpenAI's `omni-moderation-latest` and compatible servers) ----------
    def moderate(self, texts: Sequence[str]) -> list[object]:
        """One `/moderations` call per text (answers stay in order; retries as for chat calls); each
        result is the server's `results[0]` object, unchecked: the guard adapter judges its shape."""
        return self._run(self.moderate_async(texts))

    async def moderate_async(self, texts: Sequence[str]) -> list[object]:
        self._ensure_clients()
        return list(await asyncio.gather(*(self._with_retries(self._moderation_call(t)) for t in texts)))

    def _moderation_call(self, text: str) -> Callable[[Endpoint], Awaitable[object]]:
        async def send(endpoint: Endpoint) -> object:
            import openai

            try:
                body = await endpoint.client.post(
                    "/moderations", body={"model": self.model, "input": text, **self._extra}, cast_to=dict
                )
            except (openai.OpenAIError, ValueError) as exc:
                raise self._mapped(exc, endpoint) from None
            results = body.get("results") if isinstance(body, dict) else None
            return results[0] if isinstance(results, list) and len(results) == 1 else {"malformed_body": body}

        return send
