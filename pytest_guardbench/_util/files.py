"""Writing a set of files all or none, and taking them back: the one writer of `guardbench init`'s
files and of a run folder's documents.

Each new text goes to a temporary file beside its target (flushed to disk, with the target's mode),
and only when all are written are they renamed over their targets, each rename atomic; a file to
remove is removed in the same pass. A failure at any step takes back what was done: the temporary
files are removed and every file already replaced gets its old bytes and mode back (or is removed
when it was new), so the set changes whole or not at all, and no temporary file is left. The error is
the OSError that stopped it, naming the target it failed on (a full disk's ENOSPC names no file by
itself, so the error is a `FileWriteError`). `FileSet.undo` does the same after a success, for a check
that fails later."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pytest_guardbench.errors import RunFolderError

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class FileChange:
    """One file of a set: the name errors give, where it is written (links followed), its new bytes
    (None: the file is removed), and its old bytes and mode (None: there was none)."""

    shown: Path
    real: Path
    data: bytes | None
    before: bytes | None = None
    mode: int | None = None


def file_change(path: Path, data: bytes | str | None, *, real: Path | None = None) -> FileChange:
    """The change of `path` to `data` (None removes it), with what it holds now. Text is written as
    UTF-8, a lone surrogate (half a pair, which has no UTF-8 form) as U+FFFD, as results.jsonl writes
    it, rather than no file. OSError naming `path` when its old bytes cannot be read (a folder where
    the file goes)."""
    target = real if real is not None else Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        before = target.read_bytes() if target.exists() or target.is_symlink() else None
        mode = stat.S_IMODE(target.stat().st_mode) if before is not None else None
    except OSError as exc:
        raise _naming(exc, path) from None
    new = _LONE_SURROGATE.sub("\ufffd", data).encode("utf-8") if isinstance(data, str) else data
    return FileChange(path, target, new, before, mode)


class FileWriteError(RunFolderError, OSError):
    """A file guardbench writes (a run folder's document, a labels file, a starter file) could not be
    written: `filename` names it and `strerror` says why. Still an OSError, as every caller of a writer
    has always caught."""

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


def _naming(exc: OSError, path: Path) -> FileWriteError:
    """`exc` naming `path` (a full disk's ENOSPC names no file by itself)."""
    code = exc.errno if exc.errno is not None else errno.EIO
    return FileWriteError(code, exc.strerror or os.strerror(code), str(path))


def _temporary(change: FileChange, data: bytes, mode: int | None, tag: str) -> Path:
    """`data` in a new file beside the target, flushed to disk, with `mode` (a new file gets the
    umask's, as a plain open would give it); nothing is left when it cannot be written whole."""
    path = change.real.with_name(f".{change.real.name}.{secrets.token_hex(4)}.{tag}.tmp")
    handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        if mode is not None:
            os.chmod(path, mode)
    except BaseException:
        with contextlib.suppress(OSError):
            path.unlink()
        raise
    return path


@dataclass
class FileSet:
    """Files changed together by `apply` and taken back by `undo`. `tag` names the temporary files
    (`.NAME.RANDOM.TAG.tmp`), so a writer's leftovers, were a process killed mid-way, say whose they are."""

    changes: list[FileChange]
    tag: str = "guardbench"
    done: list[FileChange] = field(default_factory=list)

    def apply(self) -> None:
        """Change every file, or none: on a failure, what was done is taken back and the OSError names
        the file it failed on."""
        staged: list[tuple[FileChange, Path | None]] = []
        current = self.changes[0] if self.changes else None
        try:
            for current in self.changes:
                data = current.data
                staged.append((current, None if data is None else _temporary(current, data, current.mode, self.tag)))
            for current, temporary in list(staged):
                if temporary is None:
                    current.real.unlink(missing_ok=True)
                else:
                    os.replace(temporary, current.real)
                staged.remove((current, temporary))
                self.done.append(current)
        except OSError as exc:
            for _, temporary in staged:
                if temporary is not None:
                    with contextlib.suppress(OSError):
                        temporary.unlink()
            self.undo()
            raise _naming(exc, current.shown) if current is not None else exc from None

    def undo(self) -> None:
        """Take back what `apply` changed: old bytes and modes back, new files removed."""
        for change in reversed(self.done):
            with contextlib.suppress(OSError):
                if change.before is None:
                    change.real.unlink(missing_ok=True)
                else:
                    restored = _temporary(change, change.before, change.mode, self.tag)
                    os.replace(restored, change.real)
        self.done = []


def write_files(files: Iterable[tuple[Path, bytes | str | None]], tag: str = "guardbench") -> None:
    """Write (or, for None, remove) every file all or none; the OSError names the file it failed on."""
    FileSet([file_change(path, data) for path, data in files], tag).apply()
