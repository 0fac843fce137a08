"""The run folder (`reports/<run-id>/`): the one streaming finish that every writer goes through
(a pytest session, `merge`, `rejudge`, `import-seed`, `correct`), and the folder's life around it:
its creation and lock, meta.json, resume, merge, rejudge, seed import and the gate's comparisons
with a baseline folder or a committed scorecard."""

from __future__ import annotations

# Only the finish: merge and rejudge build judges, and loading them with the plugin would slow every run's start.
from pytest_guardbench.runfolder.finish import RunFacts, RunFinish

__all__ = ["RunFacts", "RunFinish"]
