"""The folder of a pytest run while it is written: made at the first record (or, for a resumed run,
reopened before any case runs), locked against a second writer until the run is written, with
meta.json written at once so a killed run can be checked before it is resumed, and the one finish
(`RunFinish`) every record goes through."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from pytest_guardbench.audit.label_files import carried_labels
from pytest_guardbench.audit.labels import RunLabels
from pytest_guardbench.document.read import load_run
from pytest_guardbench.document.summary import RunSummary
from pytest_guardbench.errors import DataError
from pytest_guardbench.document.execution import ResumeFacts
from pytest_guardbench.document.meta import RunMeta
from pytest_guardbench.records import CaseRecord
from pytest_guardbench.results.artifacts import write_meta
from pytest_guardbench.run.inputs import RunInputs
from pytest_guardbench.runfolder import folder, resume
from pytest_guardbench.runfolder import meta as run_meta
from pytest_guardbench.runfolder.finish import RunFinish
from pytest_guardbench.runfolder.lock import RunFolderLock

# meta.json of a run folder, given its run id and folder.
MetaOf = Callable[[str | None, Path], RunMeta]


class LiveRunFolder:
    """A pytest run's folder on its way to disk. `finish` is None until the first record (a run
    that records nothing writes no folder); `prior` and `resume` describe a resumed folder."""

    def __init__(self, inputs: RunInputs, labels: RunLabels | None, started: datetime, meta: MetaOf) -> None:
        self.inputs = inputs
        self.labels = labels
        self.started = started
        self.meta = meta
        self.run_id: str | None = None
        self.run_dir: Path | None = None
        self.finish: RunFinish | None = None
        self.prior: dict[str, CaseRecord] = {}  # a resumed run's finished cases, reused as they are
        self.resume: ResumeFacts | None = None
        self._lock: RunFolderLock | None = None
        if inputs.settings.resume is not None:
            self._reopen(inputs.settings.resume)

    def _reopen(self, run_dir: Path) -> None:
        # Locked before prepare(), which rewrites the folder: a second process on it stops here.
        self._lock = RunFolderLock(run_dir).acquire()
        try:
            if self.labels is None:
                # A corrected run resumed stays corrected by its labels: its summary and corrected.json agree.
                self.labels = carried_labels(
                    _written_summary(run_dir),
                    how_to_give="--guardbench-labels FILE, once for each file",
                    how_to_leave="start a new run instead: a resumed run keeps the labels it was corrected with",
                )
            self.prior, skipped, changed = resume.prepare(
                run_dir, run_meta.identity(self.inputs), self.inputs.cases_by_id
            )
        except BaseException:
            self.release()
            raise
        self.run_dir, self.run_id = run_dir, run_dir.name
        self.finish = self._opened(run_dir)
        self.resume = ResumeFacts(
            run_dir=str(run_dir),
            finished_before=len(self.prior),
            unreadable_lines=skipped,
            changed_cases=len(changed),
            changed_case_ids=changed[:100],
        )

    def _opened(self, run_dir: Path) -> RunFinish:
        settings = self.inputs.settings
        keep_handled = settings.baseline is not None
        return RunFinish(
            run_dir, self.inputs.policy, settings.thresholds, keep_handled=keep_handled, labels=self.labels
        )

    def opened(self) -> RunFinish:
        """The finish, making and locking the folder first when this is the run's first record."""
        if self.finish is None:
            self.run_id, self.run_dir = folder.make_run_dir(self.inputs.settings.report_dir, self.started)
            self._lock = RunFolderLock(self.run_dir).acquire()
            self.finish = self._opened(self.run_dir)
            # Written now, not only at the end, so a killed run can be checked before it is resumed.
            write_meta(self.run_dir, self.meta(self.run_id, self.run_dir))
        return self.finish

    @property
    def received(self) -> set[str]:
        """The case ids that reported a record."""
        return self.finish.received if self.finish is not None else set()

    def release(self) -> None:
        """Let the next process have the folder (after the finish, or when the run is abandoned)."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None


def _written_summary(run_dir: Path) -> RunSummary | None:
    """The summary a stopped run's folder holds from an earlier finish, if any can be read."""
    if not (run_dir / "summary.json").is_file():
        return None
    try:
        return load_run(run_dir)
    except DataError:
        return None  # a summary cut short: the run is written anew, and no corrected block was read
