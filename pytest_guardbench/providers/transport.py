"""The plumbing under the OpenAI-compatible provider: the event loop each provider runs its calls
on, one server endpoint of a role (its limit and health), a reply as read from the wire, and how a
failed call is classified (retry it, count it toward the circuit breaker, name its cause)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import concurrent.futures
import re
import threading
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pytest_guardbench.errors import GuardbenchError
from pytest_guardbench._util.counters import Counts
from pytest_guardbench.providers.base import Completion, GenerationParams, Message, ProviderError
from pytest_guardbench.providers.limits import AdaptiveLimit

T = TypeVar("T")
RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


def failure_kind(message: str) -> str:
    """What went wrong, without the details that differ from call to call: `HTTP 401`, `timed out`."""
    for pattern in (
        r"HTTP \d{3}",
        r"timed out",
        r"connection refused",
        r"cannot connect",
        r"closed the connection mid-response",
        r"invalid response body",
        r"no choices",
    ):
        found = re.search(pattern, message)
        if found:
            return found.group(0)
    return message.split(":", 2)[1].strip()[:60] if message.count(":") >= 2 else message[:60]


class CircuitOpen(ProviderError):
    """A call refused by the open circuit breaker: never sent, so not another failure of the server."""


class Retryable(GuardbenchError):
    """A failed attempt worth repeating; carries the server's Retry-After when it sent one."""

    def __init__(self, message: str, retry_after: str | None = None, rate_limited: bool = False) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.rate_limited = rate_limited


@dataclass(frozen=True)
class Reply:
    """One chat completion as the transport read it: what a tutor gets, plus the logprobs a guard reads."""

    completion: Completion
    logprobs: Any = None


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

    def stats(self) -> Counts:
        return {
            "calls": self.calls,
            "failures": self.failures,
            "taken_out": self.taken_out,
            "lowest_concurrency": self.limit.lowest,
        }


class LoopThread:
    """An event loop running forever in a daemon thread; coroutines are handed to it from any thread."""

    def __init__(self, name: str) -> None:
        self.loop = new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=f"guardbench-{name}", daemon=True)
        self._thread.start()

    def run(self, coroutine: Coroutine[object, None, T]) -> T:
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


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's loop where it is installed (not on Windows): about a sixth less CPU per call than
    asyncio's own, for the same client (bench/bench_engine_api.py)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            return False
        if isinstance(seen, kind):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


# What the HTTP stacks under the client (aiohttp, httpx, http.client) raise when a response stops
# before its body is complete; matched by name so none of them is imported here.
CUT_OFF_ERRORS = frozenset(
    {
        "ClientPayloadError",
        "ContentLengthError",
        "TransferEncodingError",
        "ServerDisconnectedError",
        "RemoteProtocolError",
        "IncompleteRead",
    }
)


def cut_off(exc: BaseException) -> str | None:
    """The innermost message of a response cut mid-body in `exc`'s chain, or None."""
    found: str | None = None
    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            break
        if type(seen).__name__ in CUT_OFF_ERRORS:
            found = str(seen).strip() or type(seen).__name__
        seen = seen.__cause__ or seen.__context__
    return found


def short(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def label_probability(logprobs: Any, label_words: tuple[str, str], verdict_after: str = "") -> float | None:
    """P(label_words[0]) against label_words[1] from the top logprobs at the first non-blank
    generated position, or with `verdict_after` at the first label word after that text has been
    generated (mass of every spelling of each word; both sums start at 1e-50)."""
    content = (logprobs.get("content") if isinstance(logprobs, dict) else None) or []
    labels = {w.lower() for w in label_words}
    generated = ""
    for position in content:
        token = str(position.get("token", ""))
        seen_marker = not verdict_after or verdict_after in generated
        generated += token
        if not token.strip() or not seen_marker:
            continue
        if verdict_after and token.strip().strip("\"'").lower() not in labels:
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


@dataclass
class Fleet:
    """The endpoints of one model (one, or several replicas): which one takes the next call, and
    taking a replica out for `cooldown_s` after `failures_to_drop` failed calls in a row."""

    endpoints: list[Endpoint]
    failures_to_drop: int = 3
    cooldown_s: float = 30.0
    clock: Callable[[], float] = time.monotonic  # the cool-down's time; a test advances its own by hand

    def pick(self, avoid: Endpoint | None) -> Endpoint:
        """The least loaded healthy endpoint, preferring one other than the endpoint that just
        failed; when every endpoint is out, the one that comes back first (tried again early)."""
        now = self.clock()
        healthy = [e for e in self.endpoints if e.healthy(now)]
        if not healthy:
            return min(self.endpoints, key=lambda e: e.down_until)
        others = [e for e in healthy if e is not avoid] or healthy
        return min(others, key=lambda e: (e.load(), e.calls))

    def failed(self, endpoint: Endpoint) -> None:
        endpoint.failures += 1
        endpoint.failures_in_a_row += 1
        if endpoint.failures_in_a_row >= self.failures_to_drop and endpoint.healthy(self.clock()):
            endpoint.down_until = self.clock() + self.cooldown_s
            endpoint.taken_out += 1

    async def slot(self, avoid: Endpoint | None) -> Endpoint:
        """Wait for a free slot on the best endpoint. A call that waited behind an endpoint which went
        out meanwhile moves to a healthy one instead of hitting the dead one."""
        while True:
            endpoint = self.pick(avoid)
            endpoint.waiting += 1
            try:
                await endpoint.limit.__aenter__()
            finally:
                endpoint.waiting -= 1
            now = self.clock()
            if endpoint.healthy(now) or not any(e.healthy(now) for e in self.endpoints):
                return endpoint
            await endpoint.limit.__aexit__(None, None, None)


def reply_from(response: Any, name: str, model: str, latency_s: float) -> Reply:
    """A reply from the decoded JSON body of a chat completion (the client hands back the body's
    text instead when the server did not label it JSON)."""
    if not isinstance(response, dict):
        raise Retryable(f"{name}: the server sent an invalid response body ({short(str(response))})")
    choices = response.get("choices")
    if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise Retryable(f"{name}: the server returned no choices")
    choice = choices[0]
    raw_message = choice.get("message")
    message: dict[str, Any] = raw_message if isinstance(raw_message, dict) else {}
    text = message.get("content")
    if text is None:
        # `content: null` is an empty reply like `content: ""` (a retry gets the same from a greedy model),
        # unless the server put a refusal in its own field (OpenAI's structured refusals).
        refusal = message.get("refusal")
        text = refusal if isinstance(refusal, str) else ""
    elif not isinstance(text, str):
        raise Retryable(f"{name}: the server sent an invalid response body (message content is {type(text).__name__})")
    usage = response.get("usage")
    if not isinstance(usage, dict):
        usage = {}
    finish_reason = choice.get("finish_reason")
    return Reply(
        Completion(
            text=text.strip(),
            model=str(response.get("model") or model),
            finish_reason=finish_reason if isinstance(finish_reason, str) else None,
            completion_tokens=_count(usage.get("completion_tokens")),
            prompt_tokens=_count(usage.get("prompt_tokens")),
            latency_s=round(latency_s, 4),
        ),
        logprobs=choice.get("logprobs"),
    )


def _count(value: Any) -> int | None:
    """A token count as the server gave it, or None: a server's odd usage block costs the count, not the reply."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def mapped_error(exc: Exception, name: str, where: str, timeout_s: float) -> Exception:
    """A client error as ours: Retryable for what a retry may cure, ProviderError otherwise."""
    import openai

    if isinstance(exc, openai.APIStatusError):
        message = f"{name}: HTTP {exc.status_code} from the server: {short(exc.message)}"
        if exc.status_code in RETRYABLE_STATUS:
            return Retryable(message, exc.response.headers.get("retry-after"), rate_limited=exc.status_code == 429)
        return ProviderError(message)
    if isinstance(exc, openai.APITimeoutError):
        # The aiohttp transport reports a refused connection as a timeout; say what really happened.
        if caused_by(exc, ConnectionRefusedError):
            return Retryable(f"{name}: connection refused at {where}")
        # ...and a connection the server closed without answering as one too.
        closed = cut_off(exc)
        if closed is not None:
            return Retryable(
                f"{name}: the server at {where} closed the connection without a whole answer ({short(closed)})"
            )
        return Retryable(f"{name}: timed out after {timeout_s:g} s")
    if isinstance(exc, openai.APIConnectionError):
        cut = cut_off(exc)
        if cut is not None:
            # Connected and answered, then the body stopped: "cannot connect" would send the user to the wrong place.
            return Retryable(f"{name}: the server at {where} closed the connection mid-response ({short(cut)})")
        return Retryable(f"{name}: cannot connect to {where}: {short(str(exc))}")
    if isinstance(exc, openai.OpenAIError):
        return ProviderError(f"{name}: {type(exc).__name__}: {short(str(exc))}")
    # the client surfaces an undecodable body as a JSON (ValueError) error
    return Retryable(f"{name}: the server sent an invalid response body ({short(str(exc))})")


def chat_request(
    model: str,
    conversation: list[Message],
    params: GenerationParams,
    seed: int | None,
    extra: Mapping[str, object],
    structured: bool,
) -> dict[str, Any]:
    """The body of one `/chat/completions` call. `extra` is the model's params then the call's own
    (logprobs, template kwargs); greedy unless a sample seed is given."""
    request: dict[str, Any] = {
        "model": model,
        "messages": conversation,
        **({"max_tokens": params.max_new_tokens} if params.max_new_tokens is not None else {}),
        "temperature": params.temperature if seed is not None else 0.0,
        **extra,
    }
    if seed is not None:
        request["seed"] = seed
    if structured and "response_format" not in request:
        request["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "verdict", "strict": True, "schema": json.loads(params.json_schema or "{}")},
        }
    # `extra_body` in a model's params means what it means to the typed client: top-level fields.
    request.update(request.pop("extra_body", {}))
    return request


def call_key(
    conversation: list[Message], params: GenerationParams, seed: int | None, extra: Mapping[str, object] | None
) -> str:
    """Names one call, so that when one call of a group fails, the others' replies are kept and not sent again."""
    return json.dumps([conversation, repr(params), seed, extra], sort_keys=True, default=str)


def http_client() -> Any:
    """The client's aiohttp transport when `openai[aiohttp]` is installed: it spends about a third
    less CPU per call than the default one, which is what bounds many concurrent calls on a small
    machine (bench/bench_engine_api.py)."""
    try:
        from openai import DefaultAioHttpClient

        return DefaultAioHttpClient()
    except (ImportError, RuntimeError):
        return None


def load_client_library() -> None:
    """Import the official client in the calling thread, before several threads make their first
    calls at once: two threads importing a package together can each meet it half initialised.
    A missing package is left for the first call to report, as it would have been."""
    with contextlib.suppress(ImportError):
        import openai  # noqa: F401
