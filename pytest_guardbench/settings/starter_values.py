"""The values `guardbench init` writes into a project's settings, checked before anything is written:
each is text a settings file holds on one line and reads back unchanged, holds no key, and, when it
names a model (`openai:<model>`, `vllm:<model>@<url>`, an alias), is a spec that parses.

A name that is none of these is a unit of the project's own (a tutor registered in conftest.py); the
collection init runs afterwards is what checks it. The messages name the option, never the value: a
value refused for a key must not reach the terminal either."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from pytest_guardbench._util.redact import redact
from pytest_guardbench.errors import UsageError
from pytest_guardbench.settings.model_specs import ModelSpec, model_aliases, parse_model_spec
from pytest_guardbench.settings.options import ConfigError

# Unicode categories no setting may hold: control and format characters (a newline would start a new
# setting in an ini file; a bidi override hides what the line says), surrogates (no UTF-8 form: a
# non-UTF-8 byte in an argument arrives as one), private and unassigned code points, and the line and
# paragraph separators that some readers take for a line break.
REFUSED_CATEGORIES = ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")


def text_problem(value: str) -> str | None:
    """Why `value` cannot be written as one setting that reads back unchanged, or None."""
    for char in value:
        category = unicodedata.category(char)
        if category == "Cs":
            return "is not valid UTF-8 text (a byte that is not UTF-8, or half of a surrogate pair)"
        if category in REFUSED_CATEGORIES:
            return f"holds a control or invisible character (U+{ord(char):04X}); write the name on one line"
    if not value.strip():
        return "is empty"
    if value != value.strip():
        return "starts or ends with a space, which an ini file would not keep"
    return None


def _url_problem(spec: ModelSpec) -> str | None:
    for url in spec.fleet or ((spec.base_url,) if spec.base_url else ()):
        parts = urlsplit(url)
        if parts.username or parts.password or parts.query or parts.fragment:
            # A user, password, query or fragment in a base URL is where a key is pasted by mistake.
            return (
                "has a URL with a user, password or query, which init does not write into a settings file "
                "(it may hold a key); name the variable that holds the key instead: vllm:<model>@<url>?key=ENV"
            )
    return None


def spec_problem(value: str, aliases: Mapping[str, ModelSpec]) -> str | None:
    """Why `value`, read as a model spec, cannot be written (it does not parse, or its URL may carry a
    key), or None: a spec that parses, or a unit name the collection will check. Never quotes `value`."""
    try:
        spec = parse_model_spec(value, dict(aliases))
    except ConfigError as exc:
        reason = str(exc).replace(repr(value), "the spec").replace(value, "the spec")
        return f"is not a model spec that parses: {reason}"
    return None if spec is None else _url_problem(spec)


def checked_stack(stack: Mapping[str, str], folder: Path) -> dict[str, str]:
    """The roles given to init (`{"tutor": ...}`), each checked; UsageError names the option of the
    first that cannot be written. Aliases are read from the folder's pyproject.toml, as the run reads them."""
    aliases: dict[str, ModelSpec] | None = None
    for role, value in stack.items():
        option = f"--{role}"
        problem = text_problem(value)
        if problem is None and redact(value) != value:
            problem = (
                "holds a key or a string shaped like one (not shown); init never writes a key into a file: "
                "name the environment variable that holds it (e.g. vllm:<model>@<url>?key=MY_API_KEY)"
            )
        if problem is None:
            aliases = model_aliases(folder) if aliases is None else aliases  # a broken table: names the file
            problem = spec_problem(value, aliases)
        if problem is not None:
            raise UsageError(f"{option}: the value {problem}; nothing written")
    return dict(stack)
