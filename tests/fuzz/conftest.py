"""Hypothesis profiles for the fuzz tests, and what every fuzzed entry point must keep to.

Profiles (pick one with the HYPOTHESIS_PROFILE environment variable; default `ci`):

- `ci`: derandomized (the same examples on every run, so CI never flakes on a new one), a bounded
  number of examples per test, no deadline (2 shared cores make timings noise). The whole folder
  stays near a minute.
- `long`: for a local hunt, `HYPOTHESIS_PROFILE=long pytest tests/fuzz -p no:randomly`: random,
  many more examples, and the failures Hypothesis finds are kept in its local database.

The profiles are applied by the `fuzz` decorator of each test, not loaded globally, so other test
files that use Hypothesis keep their own settings.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from pytest_guardbench.exit_status import ExitStatus

# Every fuzz test takes function-scoped fixtures (capsys, monkeypatch, a session folder) and makes its
# own temporary folder per example, so the health check for those fixtures does not apply.
_COMMON = {"suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow], "deadline": None}
settings.register_profile("ci", derandomize=True, max_examples=25, database=None, print_blob=True, **_COMMON)
settings.register_profile("long", max_examples=1000, **_COMMON)

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")


def fuzz(examples: int | None = None) -> settings:
    """The selected profile as a decorator; `examples` scales a test's budget under `ci` (a slow entry
    point takes fewer, a pure parser more)."""
    chosen = settings.get_profile(PROFILE)
    if examples is None or PROFILE != "ci":
        return settings(chosen)
    return settings(chosen, max_examples=examples)


# A key shaped like OpenAI's, planted in the environment (so the redaction knows it by value) and in
# the inputs (so anything that echoes an input would leak it).
SECRET = "sk-planted-Zq7RbW2xK9vTnP4mL8cY"
# A second key, of no key's shape, in another variable whose name says it holds one: known only by its value.
PLAIN_SECRET = "correct-horse-battery-7Qx2"
KEYS = (SECRET, PLAIN_SECRET)
DOCUMENTED = {int(code) for code in ExitStatus} - {int(ExitStatus.INTERNAL_ERROR)}
TRACEBACK = re.compile(r"Traceback \(most recent call last\)|^\s+File \"|INTERNALERROR", re.MULTILINE)
# What a terminal would obey (`_util.terminal`): C0 controls but line breaks and tabs, DEL, C1 controls,
# bidi marks, overrides and isolates, line separators.
STEERING = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


@pytest.fixture
def planted_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("TEAM_TUTOR_API_KEY", PLAIN_SECRET)
    return SECRET


def check_inert(text: str) -> None:
    """Nothing in `text` a terminal would obey: every escape sequence shown, not sent."""
    found = STEERING.search(text.replace("\r\n", "\n"))
    assert found is None, (
        f"{found.group()!r} reached the terminal raw: ...{text[max(found.start() - 80, 0) : found.end() + 80]!r}"
    )


def check_outcome(
    code: int,
    out: str,
    err: str,
    *,
    names: Iterable[str] = (),
    files: Iterable[Path] = (),
    inert: bool = True,
) -> None:
    """The contract every entry point keeps, whatever it is fed: a documented status that is not 3
    (internal error, a bug), nothing traceback-shaped, an error that names one of `names` (the input
    it is about), no planted key in any output or file, and (`inert`) nothing a terminal would obey."""
    text = out + err
    assert code in DOCUMENTED, f"exit {code}:\n{err[-2000:]}"
    assert not TRACEBACK.search(text), text[-3000:]
    for key in KEYS:
        assert key not in text, "a planted key reached the terminal"
    if inert:
        check_inert(text)
    given = [n for n in names if n]
    if code == ExitStatus.USAGE_ERROR and given:
        assert any(n in err for n in given), f"the message names none of {given}:\n{err}"
    for path in files:
        if path.is_file():
            data = path.read_bytes()
            assert not [key for key in KEYS if key.encode() in data], f"a planted key reached {path}"


def files_under(*roots: Path) -> list[Path]:
    return [p for root in roots if root.exists() for p in root.rglob("*") if p.is_file()]
