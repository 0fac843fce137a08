"""Reading JSON out of what a model wrote: pure string handling shared by the LLM judge's parse
ladder and the guards that answer in JSON."""

from __future__ import annotations

import json
from typing import Any


def balanced_object(text: str) -> str | None:
    """The first `{...}` in a model's reply, braces inside strings respected; to the end of the
    text when it never closes (a reply cut short); None when there is no `{`."""
    start = text.find("{")
    if start < 0:
        return None
    depth, in_string, escaped = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            escaped = ch == "\\" and not escaped
            if ch == '"' and not escaped:
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return text[start:]


def first_json_object(text: str) -> dict[str, Any] | None:
    """The reply as a JSON object, or the first balanced object in it (after a preamble or inside
    a code fence); None when neither parses to an object. No repair."""
    for candidate in (text.strip(), balanced_object(text)):
        if not candidate:
            continue
        try:
            payload = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(payload, dict):
            return payload
    return None
