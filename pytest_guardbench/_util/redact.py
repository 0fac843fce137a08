"""Keeping secrets out of every artifact: API keys are replaced wherever a server, an exception or a
model echoes them back (a 401 body that quotes the Authorization header, a proxy error page).

Known secrets are the values of environment variables whose names say they hold one (`*_KEY`,
`*TOKEN*`, `*SECRET*`, `*PASSWORD*`), and of every variable a model spec names for its key, whatever it
is called (`vllm:m@http://h/v1?key=VLLM_CRED`, an alias's `api_key_env`): those names are listed in
`GUARDBENCH_KEY_VARIABLES` (`treat_as_key`), in the environment beside the values they name, so the
processes a run starts (xdist workers, call processes) inherit the list with the keys. Key-shaped
strings (`Bearer …`, `sk-…`, `hf_…`) are replaced even when no variable holds them.

The secrets are read once and read again only when the environment changed: `current_redactor()`
keeps the `Redactor` it built with a copy of the environment it read them from, and compares the two
before every use (one dictionary comparison in C, under a microsecond for a hundred variables), so a
key set mid-run (`monkeypatch.setenv`, a conftest) is redacted from the next text on. Reading the
environment for each text cost a run of 100,000 records 15 s of its 40 (issue 44).

The same pass makes every text writable: a lone UTF-16 surrogate (half of a pair, as a server that
cut an emoji in two sends it) has no UTF-8 form and would stop the file it is written to, so it
becomes U+FFFD."""

from __future__ import annotations

import functools
import os
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "[REDACTED]"
SECRET_NAME = re.compile(r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD)(?:_|$)|TOKEN|SECRET", re.IGNORECASE)
KEY_SHAPES = re.compile(r"(?i:bearer)\s+[A-Za-z0-9._~+/=-]{6,}|\bsk-[A-Za-z0-9_-]{8,}|\bhf_[A-Za-z0-9]{10,}")
# Short values ("1", "true") would blank out ordinary words; real keys are longer than this.
MIN_SECRET_LENGTH = 8
# The variables that hold a key whatever their names say: comma-separated names.
KEY_VARIABLES = "GUARDBENCH_KEY_VARIABLES"
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


@functools.lru_cache(maxsize=4096)
def _names_a_secret(name: str) -> bool:
    """Whether a variable's name says it holds a secret. Memoised: a pure function of the name, and
    the pattern costs more than the lookup."""
    return SECRET_NAME.search(name) is not None


def listed_key_variables(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The variables `GUARDBENCH_KEY_VARIABLES` lists (set by `treat_as_key`, or by the user)."""
    env = os.environ if environ is None else environ
    return frozenset(name for name in re.split(r"[\s,]+", env.get(KEY_VARIABLES, "")) if name)


def treat_as_key(names: Iterable[str | None]) -> None:
    """Make each named variable a secret of this process and of every process it starts from now on:
    its value is redacted wherever it appears, whatever the variable is called. Called where a model
    spec that names a key variable is resolved or its client is built. The list is kept in the
    environment, not in this module: it travels with the keys to xdist workers and call processes, and
    the redactor cache sees the change as it sees a key set mid-run."""
    listed = listed_key_variables()
    wanted = sorted({name for name in names if name and name not in listed})
    if wanted:
        os.environ[KEY_VARIABLES] = ",".join(sorted(listed | set(wanted)))


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    env = os.environ if environ is None else environ
    listed = listed_key_variables(env)
    # Names first, values only of the names that hold a secret.
    values = {
        value
        for name in list(env)
        if (_names_a_secret(name) or name in listed) and len(value := env.get(name, "")) >= MIN_SECRET_LENGTH
    }
    return sorted(values, key=len, reverse=True)  # a key that contains another is replaced whole


def _may_hold_key_shape(text: str) -> bool:
    """False only when `KEY_SHAPES` cannot match `text`: each of its shapes starts with a literal
    ("sk-", "hf_", or "bearer" in any case, whose letters have no other case-insensitive match), and
    looking for those is a few C-level scans where the pattern costs microseconds per text."""
    return "sk-" in text or "hf_" in text or "bearer" in text.lower()


class Redactor:
    """`redactor(text)`: the secrets read once, for a pass over many texts (every text field of a
    record, a cache row). `Redactor()` reads the environment now; `current_redactor()` is the one to
    use for the process's own environment, read again only when it changed."""

    def __init__(self, extra: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> None:
        self.secrets = [*(v for v in extra if len(v) >= MIN_SECRET_LENGTH), *secret_values(environ)]

    def __call__(self, text: str) -> str:
        if not text:
            return text
        for value in self.secrets:
            if value in text:
                text = text.replace(value, REDACTED)
        if _may_hold_key_shape(text):
            text = KEY_SHAPES.sub(REDACTED, text)
        return text if text.isascii() else writable(text)


class _SecretsCache:
    """The redactors of this process's environment, kept with the copy of `os.environ` they were read
    from; any change of a name or a value (set, removed, replaced) makes the next use read it again.
    Keyed by the extra values a caller adds (`current_redactor(extra)`): secrets the run knows besides
    the environment's, such as values registered when a run starts, join the key and are cached the
    same way. The whole state is one tuple swapped at once, so threads never see half of it."""

    def __init__(self) -> None:
        self._state: tuple[dict[Any, Any], dict[tuple[str, ...], Redactor]] | None = None
        self._lock = threading.Lock()

    def redactor(self, extra: tuple[str, ...] = ()) -> Redactor:
        data = getattr(os.environ, "_data", None)
        if not isinstance(data, dict):
            return Redactor(extra)  # an os.environ we cannot compare cheaply: read it each time, as before
        state = self._state
        if state is None or state[0] != data:
            state = (dict(data), {})  # the copy first: a change after it is seen at the next use
        redactors = state[1]
        found = redactors.get(extra)
        if found is None:
            found = Redactor(extra)
            with self._lock:
                if len(redactors) >= 64:  # callers with ever-new extras must not grow it without end
                    redactors.clear()
                redactors[extra] = found
        self._state = state
        return found


_SECRETS = _SecretsCache()


def current_redactor(extra: Iterable[str] = ()) -> Redactor:
    """The redactor of the process's environment as it is now (and `extra` values), built only when
    the environment changed since the last one."""
    return _SECRETS.redactor(tuple(extra))


def writable(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD, so it encodes as UTF-8."""
    return LONE_SURROGATE.sub("\ufffd", text) if LONE_SURROGATE.search(text) else text


def redact(text: str, extra: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> str:
    """`text` with every known secret value and every key-shaped string replaced by [REDACTED]."""
    if not text:
        return text
    return (current_redactor(extra) if environ is None else Redactor(extra, environ))(text)


def redact_json(value: Any, redactor: Redactor | None = None) -> Any:
    """A JSON document (dicts, lists, strings, numbers) with every string value redacted; keys are
    names, kept as they are."""
    clean = redactor or current_redactor()
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, list | tuple):
        return [redact_json(item, clean) for item in value]
    if isinstance(value, dict):
        return {key: redact_json(item, clean) for key, item in value.items()}
    return value


_PLAIN = (type(None), bool, int, float)


def redacted_fields(value: Any, clean: Redactor, identifiers: frozenset[str], field: str = "") -> Any:
    """`value` (a pydantic model, a container, a text) with `clean` applied to every text in it at any
    depth, in one pass with one redactor, except the texts of fields named in `identifiers`; the same
    object where nothing changed. A model is known by its class's `model_fields` (pydantic's), so that
    this module, which every pytest run imports with the plugin's options, does not import pydantic."""
    kind = type(value)
    if kind in _PLAIN:  # most fields of a record: nothing to look at
        return value
    if isinstance(value, str):
        return value if field in identifiers else clean(value)
    fields = getattr(kind, "model_fields", None)
    if isinstance(fields, dict):
        updates = {}
        for name in fields:
            old = getattr(value, name)
            if type(old) in _PLAIN:
                continue
            new = redacted_fields(old, clean, identifiers, name)
            if new is not old:
                updates[name] = new
        return value.model_copy(update=updates) if updates else value
    if isinstance(value, tuple | list):
        if not value:
            return value
        items = [redacted_fields(item, clean, identifiers, field) for item in value]
        changed = any(new is not old for new, old in zip(items, value, strict=True))
        return type(value)(items) if changed else value
    if isinstance(value, dict):
        if not value:
            return value
        pairs = {key: redacted_fields(item, clean, identifiers, field) for key, item in value.items()}
        return pairs if any(pairs[key] is not item for key, item in value.items()) else value
    return value
