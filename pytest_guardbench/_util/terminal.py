"""The one terminal boundary: text from a model, a file or a command line is made inert before a
terminal shows it.

A reply, a file name or a label row may hold an escape sequence: a window title (OSC 0), a clipboard
write (OSC 52), a cleared screen (CSI 2J), a bell, a backspace or carriage return that rewrites what
was shown, a C1 control (U+009B is a CSI on its own), a bidi override that shows text in another order
than it is. Each such character is written as its escape instead (`\\u001b`, `\\r`, `\\u202e`), so it
is seen and does nothing. The escapes are JSON's, so a JSON document passed through stays valid JSON
that reads back as the same values.

`shown(text)` is the function; `inert_output()` puts it between a command and its stdout and stderr,
so every line a command prints takes it. A terminal control sequence guardbench writes on purpose
(the audit screen's clear) goes through `control`."""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from typing import IO, Any

# Every C0 control and DEL, every C1 control (U+0080-U+009F), the Arabic letter mark, the
# left-to-right and right-to-left marks, the line and paragraph separators, the bidi embeddings,
# overrides and isolates, and a lone surrogate (half a pair, which no UTF-8 stream can even write).
_INERT = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_INERT_KEEPING_LINES = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_SHORT = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _SHORT.get(char) or f"\\u{ord(char):04x}"


def shown(text: object, *, lines: bool = False) -> str:
    """`text` as a terminal may show it: every character that could steer the terminal written as its
    escape. One line unless `lines`: then line breaks and tabs are kept, and only they."""
    said = str(text)
    pattern = _INERT_KEEPING_LINES if lines else _INERT
    return pattern.sub(_escape, said) if pattern.search(said) else said


class InertStream:
    """A text stream whose every write is made inert (`shown`, keeping lines); everything else is the
    wrapped stream's (isatty, fileno, encoding, flush)."""

    def __init__(self, stream: IO[str]) -> None:
        self.wrapped = stream

    def write(self, text: str) -> int:
        self.wrapped.write(shown(text, lines=True))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)


def control(stream: IO[str] | InertStream, sequence: str) -> None:
    """Write a control sequence of guardbench's own (the audit screen's clear) past the boundary."""
    target = stream.wrapped if isinstance(stream, InertStream) else stream
    target.write(sequence)


@contextlib.contextmanager
def inert_output() -> Iterator[None]:
    """While inside, sys.stdout and sys.stderr make every text written to them inert."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = InertStream(sys.stdout), InertStream(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
