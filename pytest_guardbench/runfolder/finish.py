"""The one finish of a run folder. Records stream in (`RunFinish.add`: each is written to
`results.jsonl` and counted once, by the score it already carries), then `RunFinish.summary` scores
what was counted and gates it, and `RunFinish.write` writes the rest of the folder. Every writer takes
this path (a pytest session, `merge`, `rejudge`, `import-seed`, `correct`), so a summary field or a
gate check is added in one place."""

from __future__ import annotations

from collections.abc import Mapping

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from pytest_guardbench.records import Case, CaseRecord
from pytest_guardbench.results import html as html_report
from pytest_guardbench.results.artifacts import documents, json_text, write_documents
from pytest_guardbench.results.shown_cases import CasePicks
from pytest_guardbench.document.meta import FolderMeta
from pytest_guardbench.document.summary import (
    SUMMARY_SCHEMA_VERSION,
    Completeness,
    RunInfo,
    RunSummary,
    Selection,
    StackInfo,
)
from pytest_guardbench.document.gate import SnapshotCheck
from pytest_guardbench.document.read import iter_records
from pytest_guardbench.runfolder.folder import ResultsWriter, Span
from pytest_guardbench.audit.matching import LabelMatcher
from pytest_guardbench.audit.labels import RunLabels
from pytest_guardbench.document.gate import BaselineComparison
from pytest_guardbench.document.gate import Confidence
from pytest_guardbench.document.correction import Correction, corrected_document
from pytest_guardbench.document.judging import JudgeQuality
from pytest_guardbench.document.metrics import LostReport, RunMetrics
from pytest_guardbench.document.gate import GateCheck, GateResult
from pytest_guardbench.scoring.gates import corrected_checks, evaluate
from pytest_guardbench.scoring.policies import ScoringPolicy
from pytest_guardbench.scoring.run_warnings import record_warnings
from pytest_guardbench.scoring.scorecard import Scored
from pytest_guardbench.scoring.tally import RunTally
from pytest_guardbench.settings.config import Thresholds


@dataclass(frozen=True)
class AddedChecks:
    """Gate checks that need the metrics first, and the summary block that says what they compared."""

    checks: Sequence[GateCheck] = ()
    baseline: BaselineComparison | None = None
    scorecard_snapshot: SnapshotCheck | None = None


CheckBuilder = Callable[[RunMetrics], AddedChecks]
# A batch of results.jsonl is written once it holds this much, if nothing flushed it before (a merge,
# a rejudge: no one waits for a record of theirs, so their lines go in large writes).
BATCH_BYTES = 1 << 20


@dataclass(frozen=True)
class RunFacts:
    """What the finish is told besides the records: how the run went and what it measured."""

    run: RunInfo
    stack: StackInfo
    selection: Selection = field(default_factory=Selection)
    missing: Sequence[Case] = ()  # selected cases that never reported
    lost: Sequence[LostReport] = ()
    incomplete_reasons: Sequence[str] = ()
    warnings: Sequence[str] = ()
    judge_quality: JudgeQuality | None = None
    confidence: Confidence | None = None
    checks: Sequence[CheckBuilder] = ()
    min_judge_kappa: float = 0.6  # the bar for the judge's kappa on this run's own labels


class RunFinish:
    """A run folder's records on their way in, and the summary and files made from them.

    Records are counted as they arrive and never kept, so a run of any size finishes in bounded
    memory; they are read back from results.jsonl only when a case came twice or a reply the tutor
    gave to many prompts moves cases (scoring/repeated_replies.py). `handled` (case id → handled
    correctly) is kept only when a baseline check asks for it.
    With `labels` (a person's labels of this run's replies), the scorecards are also corrected by them
    and the gate decides on the corrected intervals."""

    def __init__(
        self,
        run_dir: Path,
        policy: ScoringPolicy,
        thresholds: Thresholds,
        *,
        keep_handled: bool = False,
        labels: RunLabels | None = None,
        write_records: bool = True,
    ) -> None:
        self.run_dir = run_dir
        self.policy = policy
        self.thresholds = thresholds
        self.tally = RunTally(policy, thresholds.min_recall or 0.9)
        self.picks = CasePicks(policy)
        self.handled: dict[str, bool] | None = {} if keep_handled else None
        self.labels = labels
        self.matcher = LabelMatcher(labels, policy) if labels is not None else None
        # False when the records come from the folder's own results.jsonl (a correction in place).
        self._writer: ResultsWriter | None = ResultsWriter(run_dir / "results.jsonl") if write_records else None
        self._wrote_records = write_records
        # Records written ahead of their reports (`write_ahead`), by id, until `add` is given them.
        self._ahead: dict[int, tuple[CaseRecord, Span]] = {}
        self._repeated = False

    @property
    def received(self) -> set[str]:
        """The case ids that gave a record."""
        return self.tally.received

    def add(self, record: CaseRecord, scored: Scored | None = None) -> None:
        """Count `record` (scored under the policy unless the caller already did) and take it into the
        batch of results.jsonl, written when the batch is large or by `flush`. A case given again (a
        rerun) is written, and the finish recounts: counters cannot take a record back, and the last
        record of a case is the one that counts. A record written ahead (`write_ahead`) is not written
        again. `ReportWriteError` when the folder cannot take the batch; the record is counted all the same."""
        if record.case_id in self.tally.received:
            self._repeated = True
        else:
            self._count(record, scored)
        if self._writer is None:
            return
        if self._ahead.pop(id(record), None) is None:
            self._writer.add(record)
        else:
            # Written before; a file removed since is noticed now, as the write would have noticed it.
            self._writer.check_kept(record.case_id)
        if self._writer.pending_bytes >= BATCH_BYTES:
            self._writer.flush()

    def write_ahead(self, records: Iterable[CaseRecord]) -> None:
        """Take into the batch the records of cases that finished before their tests reported, so that
        one write carries them all; each is counted when it is given to `add`. The lines of any never
        given are taken out of the file when the records close (a run stopped early, a test that
        failed before it asked for its record)."""
        if self._writer is None:
            return
        for record in records:
            if id(record) not in self._ahead:
                self._ahead[id(record)] = (record, self._writer.add(record))

    def flush(self) -> None:
        """Write the records taken so far (`ReportWriteError` when the folder cannot take them)."""
        if self._writer is not None:
            self._writer.flush()

    def _count(self, record: CaseRecord, scored: Scored | None) -> None:
        scored = self.tally.add(record, scored)
        self.picks.add(record, *scored)
        if self.handled is not None and scored.handled is not None:
            self.handled[record.case_id] = scored.handled
        if self.matcher is not None:
            self.matcher.add(record, scored)

    def close_records(self) -> None:
        """No more records: results.jsonl is whole, holds no line written ahead for a case that never
        reported, and is synced once."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            try:
                writer.discard([span for _, span in self._ahead.values()])
            finally:
                self._ahead.clear()
                writer.close()

    def summary(self, facts: RunFacts) -> RunSummary:
        """Score what was counted, gate it and assemble the summary."""
        self.close_records()
        had_repeats = self._repeated
        if self._repeated:
            # A case reported twice: the counters cannot take its first record back.
            self._recount(frozenset())
            self._repeated = False
        if self.tally.repeats.would_move():
            # A reply the tutor gave to many different prompts (scoring/repeated_replies.py) is a non-answer
            # on safe prompts; which replies those are is known only now, so the cases they moved are
            # counted again, with every count made from them (picks, baseline, labels).
            # One pass when the file is the one this finish wrote, with no case in it twice.
            self._recount(self.tally.repeats.repeated(), each_case_once=self._wrote_records and not had_repeats)
        correction = self.matcher.correction(facts.min_judge_kappa) if self.matcher is not None else None
        if correction is not None:
            facts = replace(facts, warnings=[*facts.warnings, *correction_warnings(correction, self.run_dir)])
        return build_summary(self.tally, self.thresholds, facts, correction)

    def _recount(self, non_answers: frozenset[str], *, each_case_once: bool = False) -> None:
        """Count the folder's records again from results.jsonl (the only times the finish reads it back),
        with the replies in `non_answers` counted as non-answers. `each_case_once`: no case came twice,
        so the file is read in one pass."""
        self.tally = RunTally(self.policy, self.thresholds.min_recall or 0.9, non_answers)
        self.picks = CasePicks(self.policy)
        self.handled = {} if self.handled is not None else None
        self.matcher = LabelMatcher(self.labels, self.policy) if self.labels is not None else None
        for record in iter_records(self.run_dir, each_case_once=each_case_once):
            self._count(record, None)

    def write(self, summary: RunSummary, *, manifest: Mapping[str, object], meta: FolderMeta | None) -> None:
        """summary.json, summary.md, variant_metrics.csv, data_manifest.json, meta.json, report.html and,
        for a corrected run, corrected.json (results.jsonl is written as records arrive, before this),
        all of them or none: a folder written again (correct, rejudge, merge) keeps its old documents
        whole when one cannot be written. The OSError names the file it failed on."""
        texts: dict[str, str | None] = dict(documents(summary, manifest, meta))
        # A folder written again without labels keeps no corrected.json that its summary does not back.
        corrected = summary.corrected
        texts["corrected.json"] = json_text(corrected_document(corrected)) if corrected is not None else None
        texts["report.html"] = html_report.picked_page(self.run_dir, summary, self.picks)
        if not (self.run_dir / "results.jsonl").exists():
            texts["results.jsonl"] = ""  # a run that gave no record still has its (empty) file
        write_documents(self.run_dir, texts)


def build_summary(
    tally: RunTally, thresholds: Thresholds, facts: RunFacts, correction: Correction | None = None
) -> RunSummary:
    """Score what `tally` counted, gate it, and assemble the summary. Every reason the run is
    incomplete is also a failing check: nothing says how the cases it did not measure would have scored.
    With a `correction`, the system recall and FPR bars are decided on the corrected intervals, and the
    judge's kappa on this run's own labels decides the confidence."""
    metrics = tally.metrics(facts.missing, facts.lost)
    stack, judge_warnings = _named_judge(facts.stack, tally.judge_ids)
    metrics = metrics.model_copy(update={"warnings": [*metrics.warnings, *facts.warnings, *judge_warnings]})
    added = [build(metrics) for build in facts.checks]
    extra: list[GateCheck] = [check for a in added for check in a.checks]
    extra.extend(
        GateCheck(
            name="complete",
            value=None,
            threshold=0.0,
            comparison=">=",
            status="fail",
            message=f"incomplete run: {reason}",
        )
        for reason in facts.incomplete_reasons
    )
    checks = list(evaluate(metrics, thresholds).checks)
    confidence = facts.confidence
    if correction is not None:
        # In the judge-only checks' places: readers of the gate find the same checks in the same order.
        replaced = {check.name: check for check in corrected_checks(correction.scorecards, thresholds)}
        checks = [replaced.pop(c.name, c) for c in checks] + list(replaced.values())
        confidence = labelled_confidence(correction, facts.min_judge_kappa)
    gate = GateResult(checks=(*checks, *extra))
    summary = assemble_summary(
        metrics,
        gate,
        run=facts.run,
        stack=stack,
        selection=facts.selection,
        thresholds=thresholds,
        incomplete_reasons=facts.incomplete_reasons,
    )
    blocks = {
        "judge_quality": facts.judge_quality,
        "confidence": confidence,
        "corrected": correction,
        "baseline": next((a.baseline for a in added if a.baseline is not None), None),
        "scorecard_snapshot": next((a.scorecard_snapshot for a in added if a.scorecard_snapshot is not None), None),
    }
    return summary.model_copy(update={key: block for key, block in blocks.items() if block is not None})


def labelled_confidence(correction: Correction, min_kappa: float) -> Confidence:
    """How far to trust the judge, from its agreement with this run's own labels (not another
    tutor's audit): low when its kappa on them is undefined or under the bar."""
    judge = correction.scorecards.judge_on_this_run
    kappa = judge.cohen_kappa
    where = f"{judge.n_labelled} labels of this run's own replies ({correction.labels.labels_file})"
    disagree = labellers_reason(correction)
    if kappa is None or kappa < min_kappa:
        said = "undefined" if kappa is None else f"{kappa:.3f}"
        reason = f"judge kappa {said} < {min_kappa:g} on {where}"
        return Confidence(level="low", reason=f"{reason}; {disagree}" if disagree else reason)
    reason = f"judge kappa {kappa:.3f} >= {min_kappa:g} on {where}"
    if disagree:
        return Confidence(level="low", reason=f"{disagree} ({reason})")
    return Confidence(level="normal", reason=reason)


def labellers_reason(correction: Correction) -> str | None:
    """The domains where two labellers of this run's replies agree under the bar, in words, or None."""
    agreement = correction.labellers
    if agreement is None or not agreement.low_domains:
        return None
    said = ", ".join(
        f"{domain} prompts {agreement.domains[domain].handled.cohen_kappa:.3f} "
        f"over {agreement.domains[domain].handled.rows} replies"
        for domain in agreement.low_domains
    )
    return (
        f"the labellers' kappa is under {agreement.min_kappa:g} on {said} "
        f"({' and '.join(agreement.labellers)}): the labels themselves disagree there"
    )


# Every warning about the labels starts so: a correction made again drops the earlier one's.
LABELS_WARNING = "labels: "
# The warning of records labelled by several judges starts so: a run made again from them finds it again.
JUDGES_WARNING = "the records were labelled by "


def told_warnings(summary: RunSummary) -> list[str]:
    """The warnings a run's finish was told (a demo stack, a tutor that answered as another model, a
    stored judge check measured again), not those it found in the records: a run written again from
    these records (merge, correct) finds the others again, and carries these."""
    found = set(record_warnings(summary))
    return [w for w in summary.warnings if w not in found and not w.startswith((LABELS_WARNING, JUDGES_WARNING))]


def correction_warnings(correction: Correction, run_dir: Path) -> list[str]:
    """What the run's warnings say of its labels: rows outside the draw they record, skipped units that
    could bias the correction, disagreements no one settled."""
    use = correction.labels
    draw = use.draw
    found = []
    if draw is not None and draw.outside:
        found.append(
            f"{draw.outside} label row(s) are not in the draw their file records ({draw.design}, seed {draw.seed}, "
            f"{draw.drawn} units): their inclusion probabilities are not the design's"
        )
    if draw is not None and draw.warning:
        found.append(draw.warning)
    if use.unsettled:
        names = " and ".join(correction.labellers.labellers) if correction.labellers else "two labellers"
        first, *others = use.labels_files or [use.labels_file]
        found.append(
            f"{use.unsettled} replies labelled differently by {names} are not settled: the first file's labels "
            f"are used; settle them with guardbench audit {run_dir} --adjudicate {first} "
            f"{others[0] if others else 'SECOND'} --labeller NAME"
        )
    return [LABELS_WARNING + line for line in found]


def _named_judge(stack: StackInfo, judge_ids: set[str]) -> tuple[StackInfo, list[str]]:
    """The stack with `judge_id`, the one judge its records name (a rescored run's source summary may
    name another); none, with a warning, when the records name several (a resumed run whose judge
    changed between the two processes), since no one judge measured the run."""
    named = next(iter(judge_ids)) if len(judge_ids) == 1 else None
    if not judge_ids and stack.judge_id is None:
        return stack, []  # leave the stack's keys as given: records written before judge ids name none
    stack = StackInfo.model_validate({**stack.model_dump(), "judge_id": named})
    if len(judge_ids) > 1:
        return stack, [
            f"{JUDGES_WARNING}{len(judge_ids)} different judges ({', '.join(sorted(judge_ids))}): "
            "its metrics mix their labels"
        ]
    return stack, []


def missing_reason(count: int) -> str:
    return f"{count} selected case(s) never reported"


def carried_reasons(summary: RunSummary | None) -> list[str]:
    """A summary's incomplete reasons other than its lost cases, which a rescored run counts anew."""
    if summary is None:
        return []
    lost = summary.coverage.missing.count
    return [r for r in summary.completeness.reasons if not (lost and r == missing_reason(lost))]


def assemble_summary(
    metrics: RunMetrics,
    gate: GateResult,
    *,
    run: RunInfo,
    stack: StackInfo,
    selection: Selection,
    thresholds: Thresholds,
    incomplete_reasons: Sequence[str] = (),
) -> RunSummary:
    """The summary.json document. `completeness` says whether every selected case was measured, so
    no reader takes an interrupted run, a run with lost cases or a merge short of shards for a whole one."""
    reasons = list(incomplete_reasons)
    missing = metrics.coverage.missing.count
    if missing:
        reasons.append(missing_reason(missing))
    return RunSummary(
        schema_version=SUMMARY_SCHEMA_VERSION,
        completeness=Completeness(complete=not reasons, reasons=reasons),
        run=run,
        stack=stack,
        selection=selection,
        thresholds=thresholds,
        gate=gate,
        **dict(metrics),
    )
