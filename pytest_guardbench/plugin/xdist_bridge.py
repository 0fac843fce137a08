"""The controller's xdist-only hooks, registered only when xdist is present so a plain run never
sees them: the preflight answered before any worker is sent a test, the whole-share schedule, and
what each worker selected and reported."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_guardbench._util.terminal import shown
from pytest_guardbench._util.redact import redact
from pytest_guardbench.errors import GuardbenchError
from pytest_guardbench.exit_status import ExitStatus
from pytest_guardbench.plugin.collector import freeze_long_lived
from pytest_guardbench.plugin.session import GuardbenchSession
from pytest_guardbench.plugin.wire import case_id_of
from pytest_guardbench.run.stack import calls_only_apis


class XdistBridge:
    """xdist-only hooks, registered only when xdist is present so a plain run never sees them."""

    def __init__(self, session: GuardbenchSession) -> None:
        self.session = session

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        """The models must have answered the preflight before xdist sends any worker a test; a model
        that did not stops the run here as it would have at configure time: exit 4, one line. Then the
        controller's long-lived objects leave the garbage collector's passes."""
        pending, self.session.preflight = self.session.preflight, None
        if pending is not None:
            try:
                pending.wait()
            except GuardbenchError as exc:
                if exc.exit_status == ExitStatus.INTERNAL_ERROR:
                    raise
                self.session.abandon()
                raise pytest.UsageError(shown(redact(f"guardbench: {exc}"))) from None
        if self.session.inputs.cases:
            freeze_long_lived(session.config)  # it keeps every worker's reports until it ends (plugin/collector.py)

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any | None:
        """`--dist load` (what `-n` means by default) over a run that only calls API models: each
        worker gets its whole share at once (`xdist_schedule`). Any other choice is xdist's, and so is
        a run that sets `--maxschedchunk` (it asked for xdist's chunks)."""
        if (
            config.getoption("dist", None) != "load"
            or config.getoption("maxschedchunk", None) is not None
            or not self.session.inputs.cases
            or not calls_only_apis(self.session.inputs)
        ):
            return None
        from pytest_guardbench.plugin.xdist_schedule import whole_share_scheduler

        return whole_share_scheduler(config, log)

    def pytest_testnodedown(self, node: Any, error: object) -> None:
        self.session.merge_worker(node.gateway.id, getattr(node, "workeroutput", None), error)

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """What each worker selected, known as soon as it has collected: an interrupted run, whose
        workers never send their final output, still knows how many cases were selected."""
        cases = [nodeid for nodeid in ids if case_id_of(nodeid) in self.session.inputs.cases_by_id]
        self.session.expected_ids.update(case_id for case_id in map(case_id_of, cases) if case_id is not None)
        if cases and self.session.suite_path is None:
            self.session.suite_path = cases[0].split("::")[0]
