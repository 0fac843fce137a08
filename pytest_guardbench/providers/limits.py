"""Concurrency and retry policy for remote calls: an adaptive in-flight limit and backoff delays.

No model library here, so the policy is tested on its own."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from dataclasses import dataclass


class AdaptiveLimit:
    """An asyncio semaphore whose size halves on a rate-limit answer and grows back by one after
    `recover_after` successes in a row, never past the configured ceiling (AIMD, as TCP does)."""

    def __init__(self, ceiling: int, recover_after: int = 20) -> None:
        self.ceiling = max(1, ceiling)
        self.limit = self.ceiling
        self.in_flight = 0
        self.lowest = self.ceiling
        self._recover_after = max(1, recover_after)
        self._streak = 0
        self._changed: asyncio.Condition | None = None

    def _condition(self) -> asyncio.Condition:
        # Created on first use so it binds to the loop that runs the calls.
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    async def __aenter__(self) -> None:
        changed = self._condition()
        async with changed:
            await changed.wait_for(lambda: self.in_flight < self.limit)
            self.in_flight += 1

    async def __aexit__(self, *exc: object) -> None:
        changed = self._condition()
        async with changed:
            self.in_flight -= 1
            # One slot freed wakes one waiter; waking all of them made thousands of queued calls O(n^2).
            changed.notify(1)

    def rate_limited(self) -> None:
        self._streak = 0
        self.limit = max(1, self.limit // 2)
        self.lowest = min(self.lowest, self.limit)

    async def succeeded(self) -> None:
        self._streak += 1
        if self.limit < self.ceiling and self._streak >= self._recover_after:
            self._streak = 0
            changed = self._condition()
            async with changed:
                self.limit += 1
                changed.notify(1)


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded attempts with exponential backoff and full jitter; a server's Retry-After wins."""

    max_retries: int = 3
    backoff_s: float = 0.5
    max_backoff_s: float = 30.0

    @property
    def attempts(self) -> int:
        return self.max_retries + 1

    def delay(self, attempt: int, retry_after: str | None, rng: random.Random) -> float:
        """Seconds to wait before retry number `attempt` (1-based)."""
        hinted = parse_retry_after(retry_after)
        if hinted is not None:
            return min(hinted, self.max_backoff_s)
        return rng.uniform(0, min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1)))


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds: a number of seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
