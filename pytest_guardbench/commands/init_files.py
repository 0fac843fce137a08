"""Writing `guardbench init`'s files all or none, and taking them back.

Every target is checked before any byte is written (a folder where a file goes, a file where a folder
goes, a read-only file, a folder that cannot be written); then the files are written together by the
shared all-or-none writer (`_util.files.FileSet`: temporary files beside their targets, renamed only
when all are written), and the folders init made are removed again when it fails. `FolderEdit.undo`
takes all of it back after a success, for a check that fails later."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_guardbench._util.files import FileChange, FileSet
from pytest_guardbench.errors import UsageError

WRITABLE = "pass --dir to a folder you can write"
IN_THE_WAY = "move it out of the way, or pass --dir to another folder"
# The temporary files' tag: `.NAME.RANDOM.guardbench-init.tmp`.
TAG = "guardbench-init"


def _refusal(path: Path, why: str, advice: str = IN_THE_WAY) -> UsageError:
    return UsageError(f"{path}: {why}; nothing written, {advice}")


def _target(folder: Path, path: Path, data: bytes) -> FileChange:
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
    return FileChange(shown, real, data, before, mode)


@dataclass
class FolderEdit:
    """The files init writes into a folder, written together by `apply` and taken back by `undo`."""

    folder: Path
    targets: list[FileChange] = field(default_factory=list)
    made: list[Path] = field(default_factory=list)  # folders init created, outermost first
    written: FileSet | None = None

    @classmethod
    def check(cls, folder: Path, files: Sequence[tuple[Path, str]]) -> FolderEdit:
        """Every target checked before anything is written; UsageError names the first in the way."""
        return cls(folder, [_target(folder, path, text.encode("utf-8")) for path, text in files])

    def _make_folders(self, target: FileChange) -> None:
        missing = [p for p in (target.real.parent, *target.real.parent.parents) if not p.exists()]
        for folder in reversed(missing):
            folder.mkdir()
            self.made.append(folder)

    def apply(self) -> None:
        """Write every file, or none: on a failure, what was done is taken back and UsageError names
        the file that could not be written."""
        current = self.targets[0] if self.targets else None
        try:
            for current in self.targets:
                self._make_folders(current)
            self.written = FileSet(list(self.targets), TAG)
            self.written.apply()
        except OSError as exc:
            self.undo()
            where = Path(exc.filename) if exc.filename else current.shown if current is not None else self.folder
            raise _refusal(where, f"cannot write it ({exc.strerror or type(exc).__name__})", WRITABLE) from None

    def undo(self) -> None:
        """Take back what `apply` wrote: old bytes and modes back, new files and made folders removed."""
        if self.written is not None:
            self.written.undo()
        for folder in reversed(self.made):
            with contextlib.suppress(OSError):
                folder.rmdir()  # only when empty: never a file init did not write
        self.made = []
