"""The run folder (`reports/<run-id>/`): the one streaming finish that every writer goes through
(a pytest session, `merge`, `rejudge`, `import-seed`, `correct`), and the folder's life around it:
its creation and lock, meta.json, resume, merge, rejudge, seed import and the gate's comparisons
with a baseline folder or a committed scorecard."""

from __future__ import annotations

from pytest_guardbench.runfolder.finish import RunFacts, RunFinish
from pytest_guardbench.runfolder.merge import merge_runs
from pytest_guardbench.runfolder.rejudge import rejudge_run

__all__ = ["RunFacts", "RunFinish", "merge_runs", "rejudge_run"]
