"""Writing `guardbench init`'s files all or none, and taking them back.

Every target is checked before any byte is written (a folder where a file goes, a file where a folder
goes, a read-only file, a folder that cannot be written); then each new text goes to a temporary file
beside its target, and only when all are written are they renamed over their targets, each rename
atomic. A failure at any step takes back what was done: the temporary files are removed, every file
already renamed gets its old bytes and mode back (or is removed when it was new), and the folders init
made are removed. `FolderEdit.undo` does the same after a success, for a check that fails later."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_guardbench.errors import UsageError

WRITABLE = "pass --dir to a folder you can write"
IN_THE_WAY = "move it out of the way, or pass --dir to another folder"


@dataclass(frozen=True)
class _Target:
    """One file to write: where (links followed), its new bytes, and its old bytes and mode."""

    shown: Path  # as the user names it: the folder / the starter's path
    real: Path
    data: bytes
    before: bytes | None
    mode: int | None


def _refusal(path: Path, why: str, advice: str = IN_THE_WAY) -> UsageError:
    return UsageError(f"{path}: {why}; nothing written, {advice}")


def _target(folder: Path, path: Path, data: bytes) -> _Target:
    """Where `path` in `folder` is written, checked; UsageError names what is in the way."""
    shown = folder / path
    for parent in reversed(path.parents[:-1]):  # tests/, then .github/, .github/workflows/, ...
        where = folder / parent
        if where.exists() and not where.is_dir():
            raise _refusal(where, f"is a file, not a folder, and init writes {path} inside it")
    if shown.is_symlink() and not shown.exists():
        raise _refusal(shown, "is a link to nothing")
    real = Path(os.path.realpath(shown)) if shown.is_symlink() else shown
    if real.is_dir():
        raise _refusal(shown, "is a folder, and init writes a file there")
    if real.exists() and not real.is_file():
        raise _refusal(shown, "is not a regular file")
    before = real.read_bytes() if real.exists() else None
    mode = stat.S_IMODE(real.stat().st_mode) if before is not None else None
    # Root passes os.access on anything: a file with no write bit is read-only by its owner's choice.
    if mode is not None and (not mode & 0o222 or not os.access(real, os.W_OK)):
        raise _refusal(shown, "is read-only", "make it writable first, or pass --dir to another folder")
    probe = next(p for p in (real.parent, *real.parent.parents) if p.exists())
    if not os.access(probe, os.W_OK | os.X_OK):
        raise _refusal(probe, "cannot write there (permission denied)", WRITABLE)
    return _Target(shown, real, data, before, mode)


def _write_temporary(target: _Target) -> Path:
    """The new bytes in a new file beside the target, flushed to disk, with the target's mode (a new
    file gets the umask's, as a plain open would give it)."""
    temporary = target.real.with_name(f".{target.real.name}.{secrets.token_hex(4)}.guardbench-init.tmp")
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(target.data)
            out.flush()
            os.fsync(out.fileno())
        if target.mode is not None:
            os.chmod(temporary, target.mode)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    return temporary


@dataclass
class FolderEdit:
    """The files init writes into a folder, written together by `apply` and taken back by `undo`."""

    folder: Path
    targets: list[_Target] = field(default_factory=list)
    made: list[Path] = field(default_factory=list)  # folders init created, outermost first
    renamed: list[_Target] = field(default_factory=list)

    @classmethod
    def check(cls, folder: Path, files: Sequence[tuple[Path, str]]) -> FolderEdit:
        """Every target checked before anything is written; UsageError names the first in the way."""
        return cls(folder, [_target(folder, path, text.encode("utf-8")) for path, text in files])

    def _make_folders(self, target: _Target) -> None:
        missing = [p for p in (target.real.parent, *target.real.parent.parents) if not p.exists()]
        for folder in reversed(missing):
            folder.mkdir()
            self.made.append(folder)

    def apply(self) -> None:
        """Write every file, or none: on a failure, what was done is taken back and UsageError names
        the file that could not be written."""
        temporaries: list[tuple[_Target, Path]] = []
        current = self.targets[0] if self.targets else None
        try:
            for current in self.targets:
                self._make_folders(current)
                temporaries.append((current, _write_temporary(current)))
            for current, temporary in list(temporaries):
                os.replace(temporary, current.real)
                temporaries.remove((current, temporary))
                self.renamed.append(current)
        except OSError as exc:
            for _, temporary in temporaries:
                with contextlib.suppress(OSError):
                    temporary.unlink()
            self.undo()
            where = current.shown if current is not None else self.folder
            raise _refusal(where, f"cannot write it ({exc.strerror or type(exc).__name__})", WRITABLE) from None

    def undo(self) -> None:
        """Take back what `apply` wrote: old bytes and modes back, new files and made folders removed."""
        for target in reversed(self.renamed):
            with contextlib.suppress(OSError):
                if target.before is None:
                    target.real.unlink()
                else:
                    restored = _write_temporary(_Target(target.shown, target.real, target.before, None, target.mode))
                    os.replace(restored, target.real)
        self.renamed = []
        for folder in reversed(self.made):
            with contextlib.suppress(OSError):
                folder.rmdir()  # only when empty: never a file init did not write
        self.made = []
