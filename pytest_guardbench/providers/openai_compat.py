"""OpenAI and any OpenAI-compatible server (vLLM, Ollama, llama.cpp server, Scaleway) through the
official `openai` async client. The only module that imports `openai`.

Each provider owns one event loop in a daemon thread and one client on it, so calls from many
pipeline threads share a connection pool and one adaptive in-flight limit."""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import math
import os
import random
import re
import threading
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import SecretStr

from pytest_guardbench.providers.base import Classification, Completion, GenerationParams, Message, ProviderError
from pytest_guardbench.providers.limits import AdaptiveLimit, RetryPolicy

T = TypeVar("T")
RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


def _failure_kind(message: str) -> str:
    """What went wrong, without the details that differ from call to call: `HTTP 401`, `timed out`."""
    for pattern in (r"HTTP \d{3}", r"timed out", r"connection refused", r"cannot connect", r"invalid response body", r"no choices"):
        found = re.search(pattern, message)
        if found:
            return found.group(0)
    return message.split(":", 2)[1].strip()[:60] if message.count(":") >= 2 else message[:60]


class _CircuitOpen(ProviderError):
    """A call refused by the open circuit breaker: never sent, so not another failure of the server."""


class _Retryable(Exception):
    """A failed attempt worth repeating; carries the server's Retry-After when it sent one."""

    def __init__(self, message: str, retry_after: str | None = None, rate_limited: bool = False) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.rate_limited = rate_limited


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


@dataclass
class Endpoint:
    """One server of a role: its own client, in-flight limit and health. After `failures_to_drop`
    failed calls in a row it is taken out for `cooldown_s`, then tried again."""

    url: str | None
    limit: AdaptiveLimit
    client: Any = None
    calls: int = 0
    failures: int = 0
    failures_in_a_row: int = 0
    taken_out: int = 0
    down_until: float = 0.0
    waiting: int = 0  # calls sent here that wait for a free slot

    def healthy(self, now: float) -> bool:
        return now >= self.down_until

    def load(self) -> float:
        return (self.limit.in_flight + self.waiting) / self.limit.limit

    def stats(self) -> dict[str, Any]:
        return {"calls": self.calls, "failures": self.failures, "taken_out": self.taken_out, "lowest_concurrency": self.limit.lowest}


class _LoopThread:
    """An event loop running forever in a daemon thread; coroutines are handed to it from any thread."""

    def __init__(self, name: str) -> None:
        self.loop = new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=f"guardbench-{name}", daemon=True)
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def cancel_pending(self) -> None:
        """Cancel what is still running. A call still in flight at the end of a run (Ctrl-C, an
        internal error) would otherwise leave the thread waiting on it blocked forever, and the
        interpreter waits for that thread at exit."""

        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        try:
            asyncio.run_coroutine_threadsafe(cancel_all(), self.loop).result(timeout=5)
        except (concurrent.futures.TimeoutError, RuntimeError):
            pass  # the loop is stuck or gone: stopping it is all that is left

    def stop(self) -> None:
        self.cancel_pending()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)


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
        max_retries: int = 3,
        retry_backoff_s: float = 0.5,
        extra_params: dict[str, Any] | None = None,
        fleet: Sequence[str] = (),
        failures_to_drop: int = 3,
        cooldown_s: float = 30.0,
        structured: str = "auto",
        breaker_after: int = 5,
    ) -> None:
        self.name = name
        self.model = model
        # A fleet is several replicas of the same model; `concurrency` applies to each of them.
        urls: list[str | None] = list(dict.fromkeys(fleet)) or [base_url]
        self.base_url = urls[0]
        self.api_key_env = api_key_env
        key = os.environ.get(api_key_env, "") if api_key_env else ""
        if api_key_env and not key:
            raise ProviderError(f"{name}: environment variable {api_key_env} is not set")
        # Servers without auth (a local vLLM) still need a non-empty key for the client.
        self._api_key = SecretStr(key or "not-needed")
        self.endpoints = [Endpoint(url, AdaptiveLimit(max(1, concurrency))) for url in urls]
        self.concurrency = max(1, concurrency) * len(self.endpoints)
        self._failures_to_drop = max(1, failures_to_drop)
        self._cooldown_s = cooldown_s
        self._timeout_s = timeout_s
        self._retry = RetryPolicy(max_retries=max_retries, backoff_s=retry_backoff_s)
        self._extra = dict(extra_params or {})
        # "auto": ask for structured output when a call carries a schema, and stop asking the first
        # time the server rejects it; "on": a rejection fails the call; "off": never ask.
        self._structured = structured
        self.structured_rejected: str | None = None
        self._rng = random.Random()
        self._runner: _LoopThread | None = None
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
        self._settled: dict[str, _Reply | BaseException] = {}

    def __repr__(self) -> str:
        urls = [e.url for e in self.endpoints]
        where = f"base_url={urls[0]!r}" if len(urls) == 1 else f"fleet={urls!r}"
        return f"OpenAICompatProvider(name={self.name!r}, model={self.model!r}, {where}, api_key_env={self.api_key_env!r})"

    @property
    def cache_identity(self) -> str:
        urls = ",".join(sorted(e.url or "https://api.openai.com/v1" for e in self.endpoints))
        structured = "" if self._structured == "auto" else f"|structured={self._structured}"
        return f"openai-compat|{urls}|{self.model}|{sorted(self._extra.items())!r}{structured}"

    def stats(self) -> dict[str, Any]:
        result: dict[str, Any] = {"calls": self.calls, "retries": self.retries, "rate_limited": self.rate_limited}
        if self.breaker_open:
            result["circuit_breaker"] = {"reason": self.breaker_open, "calls_not_sent": self.calls_not_sent}
        if self.structured_rejected:
            result["structured_output_rejected"] = self.structured_rejected
        result["lowest_concurrency"] = min(e.limit.lowest for e in self.endpoints)
        if len(self.endpoints) > 1:
            result["endpoints"] = {str(e.url): e.stats() for e in self.endpoints}
        return result

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self.start(coroutine).result()

    def start(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run one of this provider's coroutines (`generate_async`, `classify_async`) on its own loop."""
        with self._start_lock:
            if self._closed:
                coroutine.close()
                raise ProviderError(f"{self.name}: not sent, the run is shutting down")
            if self._runner is None:
                self._runner = _LoopThread(self.name)
        return asyncio.run_coroutine_threadsafe(coroutine, self._runner.loop)

    def close(self) -> None:
        with self._start_lock:
            self._closed = True
        runner, self._runner = self._runner, None
        if runner is None:
            return
        runner.cancel_pending()
        for endpoint in self.endpoints:
            if endpoint.client is not None:
                runner.run(endpoint.client.close())
                endpoint.client = None
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

    async def generate_async(self, conversations: Sequence[list[Message]], params: GenerationParams, seeds: Sequence[int | None]) -> list[Completion]:
        replies = await self._run_all(list(conversations), params, list(seeds), None)
        return [r.completion() for r in replies]

    async def _run_all(
        self, conversations: list[list[Message]], params: GenerationParams, seeds: list[int | None], extra: dict[str, Any] | None
    ) -> list[_Reply]:
        self._ensure_clients()
        keys = [json.dumps([c, repr(params), s, extra], sort_keys=True, default=str) for c, s in zip(conversations, seeds, strict=True)]
        outcomes = await asyncio.gather(*(self._call_once(k, c, params, s, extra) for k, c, s in zip(keys, conversations, seeds, strict=True)),
                                        return_exceptions=True)  # fmt: skip
        failed = [o for o in outcomes if isinstance(o, BaseException)]
        if not failed:
            return list(outcomes)  # type: ignore[arg-type]
        if len(conversations) > 1:
            self._settled.update(zip(keys, outcomes, strict=True))
        raise failed[0]

    async def _call_once(self, key: str, conversation: list[Message], params: GenerationParams, seed: int | None, extra: dict[str, Any] | None) -> _Reply:
        kept = self._settled.pop(key, None)
        if isinstance(kept, BaseException):
            raise kept
        if kept is not None:
            return kept
        try:
            reply = await self._with_retries(conversation, params, seed, extra)
        except _CircuitOpen:
            raise
        except ProviderError as exc:
            self._count_failure(str(exc))
            raise
        self._failed_in_a_row = ("", 0)
        return reply

    def _count_failure(self, message: str) -> None:
        kind = _failure_kind(message)
        previous, count = self._failed_in_a_row
        count = count + 1 if kind == previous else 1
        self._failed_in_a_row = (kind, count)
        if self._breaker_after and count >= self._breaker_after and self.breaker_open is None:
            self.breaker_open = (f"circuit breaker open: {count} calls in a row failed with {kind} (last: {message}); "
                                 "the rest of this model's calls fail without being sent")  # fmt: skip

    def _ensure_clients(self) -> None:
        """One client per endpoint, created on the provider's own loop (its connections live there)."""
        for endpoint in self.endpoints:
            if endpoint.client is None:
                from openai import AsyncOpenAI

                # Retries are ours (below): the client's own would hide rate limits from the adaptive limit.
                endpoint.client = AsyncOpenAI(
                    api_key=self._api_key.get_secret_value(), base_url=endpoint.url, timeout=self._timeout_s, max_retries=0, http_client=_http_client()
                )

    def classify(
        self,
        conversations: Sequence[list[Message]],
        template_kwargs: dict[str, Any],
        label_words: tuple[str, str],
        max_new_tokens: int = 8,
    ) -> list[Classification]:
        """Guard-style call: template kwargs go to the server's chat template (vLLM's
        `chat_template_kwargs`), the label probability comes from the returned logprobs."""
        return self._run(self.classify_async(conversations, template_kwargs, label_words, max_new_tokens))

    async def classify_async(
        self, conversations: Sequence[list[Message]], template_kwargs: dict[str, Any], label_words: tuple[str, str], max_new_tokens: int = 8
    ) -> list[Classification]:
        extra: dict[str, Any] = {"logprobs": True, "top_logprobs": 20}
        if template_kwargs:
            extra["chat_template_kwargs"] = template_kwargs
        params = GenerationParams(max_new_tokens=max_new_tokens)
        replies = await self._run_all(list(conversations), params, [None] * len(conversations), extra)
        return [Classification(text=r.text, p_first=_label_probability(r.logprobs, label_words)) for r in replies]

    def _pick(self, avoid: Endpoint | None) -> Endpoint:
        """The least loaded healthy endpoint, preferring one other than the endpoint that just
        failed; when every endpoint is out, the one that comes back first (tried again early)."""
        now = time.monotonic()
        healthy = [e for e in self.endpoints if e.healthy(now)]
        if not healthy:
            return min(self.endpoints, key=lambda e: e.down_until)
        others = [e for e in healthy if e is not avoid] or healthy
        return min(others, key=lambda e: (e.load(), e.calls))

    def _failed(self, endpoint: Endpoint) -> None:
        endpoint.failures += 1
        endpoint.failures_in_a_row += 1
        if endpoint.failures_in_a_row >= self._failures_to_drop and endpoint.healthy(time.monotonic()):
            endpoint.down_until = time.monotonic() + self._cooldown_s
            endpoint.taken_out += 1

    async def _slot(self, avoid: Endpoint | None) -> Endpoint:
        """Wait for a free slot on the best endpoint. A call that waited behind an endpoint which went
        out meanwhile moves to a healthy one instead of hitting the dead one."""
        while True:
            endpoint = self._pick(avoid)
            endpoint.waiting += 1
            try:
                await endpoint.limit.__aenter__()
            finally:
                endpoint.waiting -= 1
            now = time.monotonic()
            if endpoint.healthy(now) or not any(e.healthy(now) for e in self.endpoints):
                return endpoint
            await endpoint.limit.__aexit__(None, None, None)

    async def _with_retries(self, conversation: list[Message], params: GenerationParams, seed: int | None, extra: dict[str, Any] | None) -> _Reply:
        last = ""
        endpoint: Endpoint | None = None
        for attempt in range(1, self._retry.attempts + 1):
            endpoint = await self._slot(avoid=endpoint)
            if self.breaker_open:  # checked with the slot held: calls queued behind the failing ones stop here
                await endpoint.limit.__aexit__(None, None, None)
                self.calls_not_sent += 1
                raise _CircuitOpen(f"{self.name}: not sent, {self.breaker_open}")
            try:
                self.calls += 1
                endpoint.calls += 1
                try:
                    reply = await self._complete(endpoint, conversation, params, seed, extra)
                except _Retryable as exc:
                    last = str(exc)
                    self._failed(endpoint)
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
                if self._pick(avoid=endpoint) is endpoint:
                    await asyncio.sleep(self._retry.delay(attempt, retry_after, self._rng))
        raise ProviderError(f"{last} (gave up after {self._retry.attempts} attempts)")

    def _request(self, conversation: list[Message], params: GenerationParams, seed: int | None, extra: dict[str, Any] | None) -> dict[str, Any]:
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
        if self._asks_structured(params) and "response_format" not in request:
            request["response_format"] = {"type": "json_schema", "json_schema": {"name": "verdict", "strict": True, "schema": json.loads(params.json_schema or "{}")}}
        # `extra_body` in a model's params means what it means to the typed client: top-level fields.
        request.update(request.pop("extra_body", {}))
        return request

    def _asks_structured(self, params: GenerationParams) -> bool:
        return params.json_schema is not None and self._structured != "off" and self.structured_rejected is None

    async def _complete(
        self, endpoint: Endpoint, conversation: list[Message], params: GenerationParams, seed: int | None, extra: dict[str, Any] | None
    ) -> _Reply:
        import openai

        started = time.perf_counter()
        structured = self._asks_structured(params)
        try:
            # The client's generic `post` with a plain-dict result: the typed `chat.completions.create`
            # spends about a third more CPU per call transforming the request and building pydantic
            # objects, which bounds many concurrent short calls (bench/bench_engine_api.py).
            response = await endpoint.client.post("/chat/completions", body=self._request(conversation, params, seed, extra), cast_to=dict)
        except openai.APIStatusError as exc:
            message = f"{self.name}: HTTP {exc.status_code} from the server: {_short(exc.message)}"
            if structured and exc.status_code in (400, 422):
                if self._structured == "on":
                    raise ProviderError(f"{message} (the request asked for structured output; set structured = \"auto\" or \"off\" for this model)") from None
                self.structured_rejected = message  # the parse ladder and repair call take over from here
                return await self._complete(endpoint, conversation, params, seed, extra)
            if exc.status_code in RETRYABLE_STATUS:
                raise _Retryable(message, exc.response.headers.get("retry-after"), rate_limited=exc.status_code == 429) from None
            raise ProviderError(message) from None
        except openai.APITimeoutError as exc:
            # The aiohttp transport reports a refused connection as a timeout; say what really happened.
            if _caused_by(exc, ConnectionRefusedError):
                raise _Retryable(f"{self.name}: connection refused at {endpoint.url or 'the API'}") from None
            raise _Retryable(f"{self.name}: timed out after {self._timeout_s:g} s") from None
        except openai.APIConnectionError as exc:
            raise _Retryable(f"{self.name}: cannot connect to {endpoint.url or 'the API'}: {_short(str(exc))}") from None
        except openai.OpenAIError as exc:
            raise ProviderError(f"{self.name}: {type(exc).__name__}: {_short(str(exc))}") from None
        except ValueError as exc:  # the client surfaces an undecodable body as a JSON error
            raise _Retryable(f"{self.name}: the server sent an invalid response body ({_short(str(exc))})") from None
        return self._reply(response, time.perf_counter() - started)

    def _reply(self, response: Any, latency_s: float) -> _Reply:
        """A reply from the decoded JSON body of a chat completion (the client hands back the body's
        text instead when the server did not label it JSON)."""
        if not isinstance(response, dict):
            raise _Retryable(f"{self.name}: the server sent an invalid response body ({_short(str(response))})")
        choices = response.get("choices")
        if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
            raise _Retryable(f"{self.name}: the server returned no choices")
        choice = choices[0]
        text = (choice.get("message") or {}).get("content")
        if not isinstance(text, str):
            raise _Retryable(f"{self.name}: the server returned an empty message (finish_reason={choice.get('finish_reason')})")
        usage = response.get("usage") or {}
        return _Reply(
            logprobs=choice.get("logprobs"),
            text=text.strip(),
            model=response.get("model") or self.model,
            finish_reason=choice.get("finish_reason"),
            completion_tokens=usage.get("completion_tokens"),
            prompt_tokens=usage.get("prompt_tokens"),
            latency_s=round(latency_s, 4),
        )


TERMINAL_BATCH_STATES = frozenset({"completed", "failed", "expired", "cancelled"})


class BatchAPIProvider(OpenAICompatProvider):
    """The same calls sent through the provider's Batch API: all calls of one stage go up as one
    JSONL file, the batch is polled until it ends, and its output lines become the answers.

    The batch id is written to `state_dir` under a hash of the file's content before polling, so a
    run stopped while the batch is in flight finds it again (same pending calls, same file) and
    polls it instead of paying twice. Lines the batch failed are sent again as normal calls."""

    def __init__(self, *args: Any, state_dir: Path, poll_s: float = 10.0, completion_window: str = "24h", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._state_dir = state_dir
        self._poll_s = poll_s
        self._window = completion_window
        self.batches_submitted = 0
        self.batches_resumed = 0
        self.batch_lines = 0
        self.sent_again = 0

    def stats(self) -> dict[str, Any]:
        return {
            **super().stats(),
            "batches_submitted": self.batches_submitted,
            "batches_resumed": self.batches_resumed,
            "batch_lines": self.batch_lines,
            "sent_again": self.sent_again,
        }

    async def _run_all(
        self, conversations: list[list[Message]], params: GenerationParams, seeds: list[int | None], extra: dict[str, Any] | None
    ) -> list[_Reply]:
        self._ensure_clients()
        bodies = [self._request(conversation, params, seed, extra) for conversation, seed in zip(conversations, seeds, strict=True)]
        content = "".join(
            json.dumps({"custom_id": f"r{i}", "method": "POST", "url": "/v1/chat/completions", "body": body}, sort_keys=True) + "\n"
            for i, body in enumerate(bodies)
        ).encode("utf-8")
        state = self._state_dir / f"{hashlib.sha256(content).hexdigest()[:32]}.json"
        client = self.endpoints[0].client
        batch = await self._submit_or_resume(client, content, state)
        started = time.perf_counter()
        while batch.status not in TERMINAL_BATCH_STATES:
            await asyncio.sleep(self._poll_s)
            batch = await client.batches.retrieve(batch.id)
        if batch.status != "completed":
            state.unlink(missing_ok=True)
            raise ProviderError(f"{self.name}: batch {batch.id} ended {batch.status}; its calls were not answered")
        answers: dict[str, Any] = {}
        if batch.output_file_id:
            output = await client.files.content(batch.output_file_id)
            for line in output.text.splitlines():
                if line.strip():
                    row = json.loads(line)
                    answers[row["custom_id"]] = row
        latency = time.perf_counter() - started
        replies = list(
            await asyncio.gather(
                *(self._from_batch(answers.get(f"r{i}"), latency, c, params, s, extra) for i, (c, s) in enumerate(zip(conversations, seeds, strict=True)))
            )
        )
        state.unlink(missing_ok=True)
        return replies

    async def _submit_or_resume(self, client: Any, content: bytes, state: Path) -> Any:
        if state.is_file():
            self.batches_resumed += 1
            return await client.batches.retrieve(json.loads(state.read_text(encoding="utf-8"))["batch_id"])
        uploaded = await client.files.create(file=("guardbench-batch.jsonl", content), purpose="batch")
        batch = await client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window=self._window)
        self._state_dir.mkdir(parents=True, exist_ok=True)
        tmp = state.with_suffix(".tmp")
        tmp.write_text(json.dumps({"batch_id": batch.id, "input_file_id": uploaded.id, "model": self.model}), encoding="utf-8")
        os.replace(tmp, state)
        self.batches_submitted += 1
        self.batch_lines += content.count(b"\n")
        return batch

    async def _from_batch(
        self, row: dict[str, Any] | None, latency: float, conversation: list[Message], params: GenerationParams, seed: int | None, extra: dict[str, Any] | None
    ) -> _Reply:
        response = (row or {}).get("response") or {}
        if response.get("status_code") == 200:
            try:
                return self._reply(response.get("body"), latency)
            except _Retryable:
                pass
        self.sent_again += 1
        return await self._with_retries(conversation, params, seed, extra)


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's loop where it is installed (not on Windows): about a sixth less CPU per call than
    asyncio's own, for the same client (bench/bench_engine_api.py)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            return False
        if isinstance(seen, kind):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _http_client() -> Any:
    """The client's aiohttp transport when `openai[aiohttp]` is installed: it spends about a third
    less CPU per call than the default one, which is what bounds many concurrent calls on a small
    machine (bench/bench_engine_api.py)."""
    try:
        from openai import DefaultAioHttpClient

        return DefaultAioHttpClient()
    except (ImportError, RuntimeError):
        return None


def _label_probability(logprobs: Any, label_words: tuple[str, str]) -> float | None:
    """P(label_words[0]) against label_words[1] from the top logprobs at the first non-blank
    generated position (mass of every spelling of each word; both sums start at 1e-50)."""
    content = (logprobs.get("content") if isinstance(logprobs, dict) else None) or []
    for position in content:
        if not str(position.get("token", "")).strip():
            continue
        first, second = 1e-50, 1e-50
        for candidate in position.get("top_logprobs") or []:
            word = str(candidate.get("token", "")).strip().lower()
            if word == label_words[0].lower():
                first += math.exp(candidate["logprob"])
            elif word == label_words[1].lower():
                second += math.exp(candidate["logprob"])
        return round(first / (first + second), 6)
    return None


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
