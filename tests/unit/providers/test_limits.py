"""Retry delays and the adaptive in-flight limit."""

from __future__ import annotations

import asyncio
import random
from email.utils import format_datetime
from datetime import datetime, timedelta, timezone

import pytest

from pytest_guardbench.providers.limits import AdaptiveLimit, RetryPolicy, parse_retry_after


def test_retry_after_seconds_and_http_date():
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after("0.05") == 0.05
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    later = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=30), usegmt=True)
    assert 25 <= parse_retry_after(later) <= 31


def test_backoff_is_bounded_jittered_and_yields_to_retry_after():
    policy = RetryPolicy(max_retries=5, backoff_s=0.5, max_backoff_s=4.0)
    rng = random.Random(7)
    for attempt, cap in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (6, 4.0)]:
        delays = [policy.delay(attempt, None, rng) for _ in range(200)]
        assert all(0 <= d <= cap for d in delays)
        assert max(delays) > cap * 0.8, "full jitter spreads over the whole window"
    assert policy.delay(1, "3", rng) == 3.0
    assert policy.delay(1, "120", rng) == 4.0, "a server's hint is capped too"
    assert policy.attempts == 6


def test_adaptive_limit_halves_on_rate_limit_and_recovers():
    async def scenario():
        limit = AdaptiveLimit(8, recover_after=3)
        limit.rate_limited()
        assert limit.limit == 4
        limit.rate_limited()
        limit.rate_limited()
        limit.rate_limited()
        assert limit.limit == 1 and limit.lowest == 1
        for _ in range(3 * 7):
            await limit.succeeded()
        assert limit.limit == 8
        for _ in range(10):
            await limit.succeeded()
        assert limit.limit == 8, "never past the ceiling"

    asyncio.run(scenario())


def test_adaptive_limit_bounds_concurrency():
    async def scenario():
        limit = AdaptiveLimit(3)
        active = peak = 0

        async def call():
            nonlocal active, peak
            async with limit:
                active += 1
                peak = max(peak, active)
                await asyncio.sleep(0.01)
                active -= 1

        await asyncio.gather(*(call() for _ in range(20)))
        limit.rate_limited()
        peak_before, peak = peak, 0
        await asyncio.gather(*(call() for _ in range(20)))
        return peak_before, peak

    assert asyncio.run(scenario()) == (3, 1)


@pytest.mark.parametrize("ceiling", [0, -3])
def test_limit_never_below_one(ceiling):
    assert AdaptiveLimit(ceiling).limit == 1
