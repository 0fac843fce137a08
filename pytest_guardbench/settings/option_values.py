"""The value parsers of the option table (options.py): each turns one option's text into its value,
or raises argparse.ArgumentTypeError, which argparse reports with the option's name (exit 4); and the
bounds past which a value is a slip rather than a request."""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Callable
from typing import TypeVar

from pytest_guardbench._util.redact import redact

__all__ = [
    "MAX_API_PROCESSES",
    "MAX_ATTACKER_TURNS",
    "MAX_BATCH_SIZE",
    "MAX_CASES",
    "MAX_CONCURRENCY",
    "MAX_NEW_TOKENS",
    "MAX_RETRIES",
    "MAX_SAMPLES",
    "MAX_SECONDS",
    "ROLES",
    "at_most",
    "choice",
    "concurrency",
    "count",
    "fraction",
    "kappa",
    "name_list",
    "positive",
    "positive_seconds",
    "quoted",
    "real_number",
    "seconds",
    "shard",
    "yes_no",
]


def quoted(text: str) -> str:
    """`text` as an error quotes it, redacted: a key pasted where a number belongs is not echoed."""
    return repr(redact(text))


def real_number(text: str) -> float:
    """`text` as a float, for a parser that then checks its range: -0 is read as 0, and a subnormal
    number (5e-324: below the smallest normal float, so it has lost its precision) is refused, since no
    option means one. NaN and the infinities come back as they are, for the range check to refuse;
    ValueError when `text` is no number."""
    value = float(text)
    if value != 0 and abs(value) < sys.float_info.min:
        raise argparse.ArgumentTypeError(f"{quoted(text)} is too small to be a value (a subnormal number)")
    return value + 0.0  # -0.0 + 0.0 is 0.0


def fraction(text: str) -> float:
    try:
        value = real_number(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{quoted(text)} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{quoted(text)} is not between 0 and 1")
    return value


def kappa(text: str) -> float:
    """A bar for Cohen's kappa, which runs from -1 to 1 (NaN and infinities are not bars)."""
    try:
        value = real_number(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid float value: {quoted(text)}") from None
    if not -1.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{quoted(text)} is not a kappa between -1 and 1")
    return value


# A number type a text converts to: int or float.
_Number = TypeVar("_Number", int, float)


def _non_negative(text: str, convert: Callable[[str], _Number], what: str) -> _Number:
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{quoted(text)} is not {what}") from None
    if value != value:  # NaN compares false with everything, so `< 0` would let it through
        raise argparse.ArgumentTypeError(f"{quoted(text)} is not {what}")
    if value < 0:
        raise argparse.ArgumentTypeError(f"{quoted(text)} is negative")
    return value


def count(text: str) -> int:
    return int(_non_negative(text, int, "a whole number"))


def positive(text: str) -> int:
    value = count(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def at_most(limit: int, parse: Callable[[str], int] = positive) -> Callable[[str], int]:
    """A whole number no larger than `limit`: past it a run would exhaust memory or never end, so the
    value is refused before anything is built."""

    def bounded(text: str) -> int:
        value = parse(text)
        if value > limit:
            raise argparse.ArgumentTypeError(f"{quoted(text)} is more than {limit:,}")
        return value

    return bounded


def choice(*allowed: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in allowed:
            raise argparse.ArgumentTypeError(f"{quoted(text)} is not one of {', '.join(allowed)}")
        return text

    return parse


_DIGITS = re.compile(r"[0-9]+")


def shard(text: str) -> tuple[int, int]:
    index, slash, total = text.partition("/")
    # ASCII digits only: str.isdigit() also says yes to "²", which int() refuses.
    if not slash or not _DIGITS.fullmatch(index) or not _DIGITS.fullmatch(total) or not 1 <= int(index) <= int(total):
        raise argparse.ArgumentTypeError(f"{quoted(text)} is not i/n with 1 <= i <= n")
    return int(index), int(total)


def yes_no(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"{quoted(text)} is not true or false")


# A week: longer waits are typing slips, and asyncio cannot schedule an infinite or enormous timeout.
MAX_SECONDS = 7 * 24 * 3600.0


def seconds(text: str) -> float:
    value = float(_non_negative(text, real_number, "a number of seconds"))
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{quoted(text)} is not a finite number of seconds")
    if value > MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"{quoted(text)} is more than a week ({MAX_SECONDS:.0f} s)")
    return value


def positive_seconds(text: str) -> float:
    value = seconds(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"{quoted(text)} must be more than 0 seconds")
    return value


# Upper bounds of counts that size memory or run time: beyond them a value is a slip, refused as a
# usage error rather than discovered as an out-of-memory crash hours in.
MAX_SAMPLES = 1000
# More cases than any run holds: a count of cases (errors tolerated, replies to label) past it is a slip.
MAX_CASES = 1_000_000_000
MAX_RETRIES = 100
MAX_NEW_TOKENS = 1_000_000
MAX_BATCH_SIZE = 65_536
MAX_API_PROCESSES = 1024
MAX_CONCURRENCY = 100_000
MAX_ATTACKER_TURNS = 50

ROLES = ("guardrail", "tutor", "judge")


def concurrency(text: str) -> dict[str, int]:
    """`16` (every role) or `tutor=4,judge=16` (per role), or both: `16,tutor=4`."""
    limits: dict[str, int] = {}
    for part in name_list(text):
        role, eq, number = part.rpartition("=")
        role = role.strip() if eq else "all"
        if role not in ("all", *ROLES):
            raise argparse.ArgumentTypeError(f"{quoted(part)}: role must be one of {', '.join(ROLES)}")
        if role in limits:
            # Two values for one role would leave one of them silently unused.
            raise argparse.ArgumentTypeError(
                f"{quoted(text)}: {'the run-wide value' if role == 'all' else role} given twice"
            )
        try:
            limits[role] = at_most(MAX_CONCURRENCY)(number.strip())
        except argparse.ArgumentTypeError as exc:
            raise argparse.ArgumentTypeError(f"{quoted(part)}: {exc}") from None
    if not limits:
        raise argparse.ArgumentTypeError(f"{quoted(text)}: expected N or role=N[,role=N]")
    return limits


def name_list(text: str) -> list[str]:
    """The items of a comma list, stripped, empty ones left out."""
    return [part.strip() for part in text.split(",") if part.strip()]
