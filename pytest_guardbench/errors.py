"""The one base of every error guardbench raises, and its kinds.

Catch `GuardbenchError` to catch anything guardbench raises on purpose; catch a kind to handle one
cause. Each concrete error lives next to the code that raises it and derives from one kind:

- `UsageError`: an option, ini key, CLI argument or name cannot be used (`ConfigError`,
  `VariantError`, `PolicyError`, `CompareError`).
- `DataError`: an input file's content is wrong (`LabellingMismatch`; loaders raise it directly).
- `ProviderError` (in `providers.base`, because its text is redacted with `_util.redact`, which this
  module may not import): a model or API call failed (`CacheMiss`, `CircuitOpen`).
- `RunFolderError`: a run folder cannot be resumed or written (`ResumeError`, `ReportWriteError`).
- `InternalError`: a broken promise inside guardbench itself (exit 3, "a bug: please report it"),
  never a user's input.

A kind also keeps the builtin base its callers have always caught (`ValueError`, `RuntimeError`,
`OSError`), so `except ValueError` still sees a bad option.
"""

from __future__ import annotations

import os
from typing import ClassVar

from pytest_guardbench.exit_status import ExitStatus

__all__ = ["DataError", "GuardbenchError", "InternalError", "RunFolderError", "UsageError"]


class GuardbenchError(Exception):
    """Base of every error guardbench raises."""

    # The exit status a run or command ends with when this error stops it; None where that depends on
    # when it happens (a provider error mid-run is recorded on its case, not an exit).
    exit_status: ClassVar[int | None] = None


class UsageError(GuardbenchError, ValueError):
    """An option, ini key, CLI argument or name cannot be used; the message names it."""

    exit_status: ClassVar[int | None] = ExitStatus.USAGE_ERROR


class DataError(GuardbenchError, ValueError):
    """An input file's content is wrong. Given the file (and line or item), the text reads
    `path:line: message`; without them the message is expected to name the file itself."""

    exit_status: ClassVar[int | None] = ExitStatus.USAGE_ERROR

    def __init__(self, message: str, *, path: str | os.PathLike[str] | None = None, line: int | None = None) -> None:
        self.message = message
        self.path = None if path is None else os.fspath(path)
        self.line = line
        where = "" if self.path is None else self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {message}" if where else message)


class RunFolderError(GuardbenchError):
    """A run folder cannot be resumed, written or merged; the message names the folder or file."""


class InternalError(GuardbenchError, RuntimeError):
    """A promise inside guardbench was broken: a bug, never a user's input."""

    exit_status: ClassVar[int | None] = ExitStatus.INTERNAL_ERROR
