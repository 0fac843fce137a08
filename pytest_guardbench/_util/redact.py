"""Keeping secrets out of every artifact: API keys are replaced wherever a server, an exception or a
model echoes them back (a 401 body that quotes the Authorization header, a proxy error page).

Known secrets are the values of environment variables whose names say they hold one (`*_KEY`,
`*TOKEN*`, `*SECRET*`, `*PASSWORD*`), read at the moment of redaction so nothing is kept in module
state; key-shaped strings (`Bearer …`, `sk-…`, `hf_…`) are replaced even when no variable holds them.

The same pass makes every text writable: a lone UTF-16 surrogate (half of a pair, as a server that
cut an emoji in two sends it) has no UTF-8 form and would stop the file it is written to, so it
becomes U+FFFD."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "[REDACTED]"
SECRET_NAME = re.compile(r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD)(?:_|$)|TOKEN|SECRET", re.IGNORECASE)
KEY_SHAPES = re.compile(r"(?i:bearer)\s+[A-Za-z0-9._~+/=-]{6,}|\bsk-[A-Za-z0-9_-]{8,}|\bhf_[A-Za-z0-9]{10,}")
# Short values ("1", "true") would blank out ordinary words; real keys are longer than this.
MIN_SECRET_LENGTH = 8
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


@functools.lru_cache(maxsize=4096)
def _names_a_secret(name: str) -> bool:
    """Whether a variable's name says it holds a secret. Memoised: a pure function of the name (the
    values are still read at each redaction), and the pattern costs more than the lookup."""
    return SECRET_NAME.search(name) is not None


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    env = os.environ if environ is None else environ
    # Names first, values only of the names that hold a secret: a record's texts are redacted as it
    # is made, several times a case, and reading every value of the environment each time cost a
    # warm-cache run of 1,000 cases 0.39 s of its 2.2 s (55 µs a reading, now 9; bench/bench_fixed_costs.py).
    values = {
        value for name in list(env) if _names_a_secret(name) and len(value := env.get(name, "")) >= MIN_SECRET_LENGTH
    }
    return sorted(values, key=len, reverse=True)  # a key that contains another is replaced whole


class Redactor:
    """`redactor(text)`: the secrets read once, for a pass over many texts (every text field of a
    record, a cache row), instead of scanning the environment per string."""

    def __init__(self, extra: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> None:
        self.secrets = [*(v for v in extra if len(v) >= MIN_SECRET_LENGTH), *secret_values(environ)]

    def __call__(self, text: str) -> str:
        if not text:
            return text
        for value in self.secrets:
            if value in text:
                text = text.replace(value, REDACTED)
        return writable(KEY_SHAPES.sub(REDACTED, text))


def writable(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD, so it encodes as UTF-8."""
    return LONE_SURROGATE.sub("\ufffd", text) if LONE_SURROGATE.search(text) else text


def redact(text: str, extra: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> str:
    """`text` with every known secret value and every key-shaped string replaced by [REDACTED]."""
    return Redactor(extra, environ)(text) if text else text


def redact_json(value: Any, redactor: Redactor | None = None) -> Any:
    """A JSON document (dicts, lists, strings, numbers) with every string value redacted; keys are
    names, kept as they are."""
    clean = redactor or Redactor()
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, list | tuple):
        return [redact_json(item, clean) for item in value]
    if isinstance(value, dict):
        return {key: redact_json(item, clean) for key, item in value.items()}
    return value
