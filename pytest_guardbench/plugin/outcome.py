"""A scored case as the shipped suite sees it (`guardbench_outcome`), and the per-case facts that go
into JUnit XML."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from pytest_guardbench._util.terminal import shown
from pytest_guardbench.settings.config import GateMode
from pytest_guardbench.records import CaseRecord, Outcome
from pytest_guardbench.results.sources import JUDGE_ONLY
from pytest_guardbench.scoring.scorecard import Scored, explain

if TYPE_CHECKING:
    from syrupy.assertion import SnapshotAssertion


@dataclass(frozen=True)
class GuardbenchOutcome:
    """A scored case. `require_handled()` is the assertion the shipped suite makes."""

    record: CaseRecord
    outcome: Outcome | None
    unscored_reason: str | None
    explanation: str
    mode: GateMode

    @classmethod
    def of(cls, record: CaseRecord, scored: Scored, mode: GateMode) -> GuardbenchOutcome:
        outcome, reason = scored
        # A failure message reaches the terminal: a judge's reason or a server's error cannot steer it.
        return cls(record, outcome, reason, shown(explain(record, outcome, reason)), mode)

    @property
    def handled(self) -> bool:
        return self.outcome in ("TP", "TN")

    def baseline_view(self) -> dict[str, str | bool | None]:
        """What a per-case baseline keeps: decisions and correctness, never the raw text (it varies)."""
        record = self.record
        return {
            "guard_decision": record.guard.status if record.guard else None,
            "answer_mode": record.judge.answer_mode if record.judge else None,
            "response_safety": record.judge.response_safety if record.judge else None,
            "outcome": self.outcome,
            "correct": self.handled if self.outcome is not None else None,
        }

    def check_baseline(self, snapshot: SnapshotAssertion) -> None:
        """Compare this case with its syrupy snapshot (JSON). A case handled in the baseline and
        mishandled now fails as a regression; an improvement or another change fails as a snapshot
        change to accept with --snapshot-update."""
        __tracebackhide__ = True
        from syrupy.extensions.json import JSONSnapshotExtension

        stored = snapshot.use_extension(JSONSnapshotExtension)
        view = self.baseline_view()
        if stored == view:
            return
        recalled = stored.executions[stored.num_executions - 1].recalled_data
        if recalled is None:
            pytest.fail(
                f"no baseline for {self.record.case_id}: run with --snapshot-update to record one", pytrace=False
            )
        before = json.loads(recalled)
        change = f"{before.get('outcome')} → {view['outcome']}"
        if before.get("correct") is True and view["correct"] is False:
            pytest.fail(f"regression against the baseline ({change}): {self.explanation}", pytrace=False)
        kind = "improvement" if before.get("correct") is False and view["correct"] is True else "changed outcome"
        pytest.fail(f"{kind} against the baseline ({change}); accept it with --snapshot-update", pytrace=False)

    def require_handled(self) -> None:
        """Pass when handled; otherwise fail (strict mode, or pipeline error) or xfail (gate mode),
        saying which stage mishandled the case. Unlabelled cases are skipped: they are not scored."""
        # Hidden from tracebacks, and no traceback for the xfail either: the message says it all, and
        # pytest parsing the sources of the frames for every xfailed case took 5-25 ms each
        # (bench/bench_warm_cache.py).
        __tracebackhide__ = True
        if self.unscored_reason == "error":
            pytest.fail(self.explanation, pytrace=False)
        if self.unscored_reason == "unlabelled":
            pytest.skip(self.explanation)
        if self.handled:
            return
        if self.mode == "gate":
            # The outcome leads the reason, so JUnit's <skipped message> (where xfail goes) says FN or FP.
            raise pytest.xfail.Exception(f"{self.outcome}: {self.explanation}", pytrace=False)
        pytest.fail(self.explanation, pytrace=False)


def junit_properties(record: CaseRecord, scored: Scored) -> list[tuple[str, str]]:
    """Small per-case facts for --junitxml (never prompt or response text, never keys)."""
    outcome, reason = scored
    label = "harmful" if record.is_harmful else "safe" if record.is_harmful is False else "unlabelled"
    properties = [
        ("guardbench.case_id", record.case_id),
        ("guardbench.variant", record.variant),
        ("guardbench.category", record.category or ""),
        ("guardbench.label", label),
        ("guardbench.guard_decision", record.guard.status if record.guard else "no-guard"),
        ("guardbench.outcome", outcome or f"unscored:{reason}"),
        # A case's outcome is the judge's verdict under the policy: labels correct rates, not cases.
        ("guardbench.outcome_source", JUDGE_ONLY),
    ]
    if record.error is not None:
        properties.append(("guardbench.failed_stage", record.error.stage))
    elif outcome in ("FN", "FP"):
        properties.append(
            (
                "guardbench.failed_stage",
                "guard" if record.response is not None and record.response.source == "guard_block" else "tutor",
            )
        )
    if record.judge is not None:
        properties.append(("guardbench.judge_reason", record.judge.reason[:300]))
    return properties
