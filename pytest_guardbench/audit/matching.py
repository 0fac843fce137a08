"""A labels file matched to a run's records as they stream through the finish: every reply the judge
scored becomes a unit of the correction (`units`), and a labelled one its truth (`labels`).
Single-prompt cases correct the scorecards; a conversation's replies are corrected as replies, per
depth. A label of a reply that changed since it was labelled measures something else: it is dropped
and counted."""

from __future__ import annotations

from pytest_guardbench.audit.units import AuditLabel
from pytest_guardbench.audit.units import AuditUnit
from pytest_guardbench.document.correction import Correction
from pytest_guardbench.document.correction import LabelUse
from pytest_guardbench.audit.units import LabelledReply
from pytest_guardbench.audit.labels import RunLabels
from pytest_guardbench.audit.correction import correct_run
from pytest_guardbench.audit.units import labelled_replies
from pytest_guardbench.audit.labels import labelled_truth
from pytest_guardbench.audit.labels import reply_sha256
from pytest_guardbench.audit.labels import unit_of
from pytest_guardbench.audit.agreement import labellers_agreement
from pytest_guardbench.audit.draw_record import PopulationUnit, check_draw

from collections import defaultdict
from dataclasses import dataclass, field


from pytest_guardbench.records import CaseRecord
from pytest_guardbench.scoring.policies import ScoringPolicy
from pytest_guardbench.scoring.scorecard import Scored


@dataclass
class LabelMatcher:
    """The finish's view of a labels file: every reply the judge scored becomes a unit of the
    correction (`audit.units`), and a labelled one its truth. Single-prompt cases correct the
    scorecards; a conversation's replies are corrected as replies, per depth. Holds one small unit per
    reply (no text)."""

    labels: RunLabels
    policy: ScoringPolicy
    units: list[AuditUnit] = field(default_factory=list)
    matched: list[AuditLabel] = field(default_factory=list)
    groups: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    reply_units: list[AuditUnit] = field(default_factory=list)
    reply_matched: list[AuditLabel] = field(default_factory=list)
    reply_groups: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    reply_changed: int = 0
    undecided: int = 0
    # Every unit of the run as the labels' draw sees it (no text), to draw again and compare.
    population: list[PopulationUnit] = field(default_factory=list)
    # The units whose label rows match a reply of this run, for the labellers' agreement.
    in_run: set[str] = field(default_factory=set)

    def add(self, record: CaseRecord, scored: Scored) -> None:
        for reply in labelled_replies(record, self.policy, scored):
            unit = AuditUnit(
                unit_id=reply.unit_id,
                is_harmful=reply.is_harmful,
                tutor_ran=reply.tutor_ran,
                judge_handled=reply.judge_handled,
            )
            if reply.turn is None:
                self.units.append(unit)
                self.groups[f"variant={record.variant}"].append(unit.unit_id)
                self.groups[f"category={(record.category or '(none)').lower()}"].append(unit.unit_id)
                matched = self.matched
            else:
                self.reply_units.append(unit)
                self.reply_groups[f"depth={reply.turn}"].append(unit.unit_id)
                matched = self.reply_matched
            self.population.append(
                PopulationUnit(reply.unit_id, reply_sha256(reply.reply.text), reply.is_harmful, reply.judge_handled)
            )
            label = self._label(reply)
            if label is not None:
                matched.append(label)

    def _label(self, reply: LabelledReply) -> AuditLabel | None:
        row = self.labels.rows.get(reply.unit_id)
        if row is None:
            return None
        if (row.reply_sha256 or reply_sha256(row.response)) != reply_sha256(reply.reply.text):
            self.reply_changed += 1
            return None
        self.in_run.add(reply.unit_id)
        truth = labelled_truth(row, reply.is_harmful, self.policy)
        if truth is None:
            self.undecided += 1
            return None
        stratified = self.labels.design == "stratified"
        return AuditLabel(
            unit_id=reply.unit_id,
            handled=truth,
            stratum=row.stratum if stratified else None,
            inclusion_probability=row.inclusion_probability if stratified else None,
        )

    def correction(self, min_labeller_kappa: float = 0.6) -> Correction:
        """The correction block; two labellers whose kappa on a domain is under `min_labeller_kappa` name it low."""
        labels = self.labels
        used = len(self.matched) + len(self.reply_matched)
        use = LabelUse(
            labels_file=str(labels.path),
            design=labels.design,
            rows=len(labels.rows),
            used=used,
            reply_changed=self.reply_changed,
            undecided=self.undecided,
            not_in_run=len(labels.rows) - used - self.reply_changed - self.undecided,
            labels_files=[str(path) for path in labels.files],
            labellers=sorted({row.labeller for row in labels.rows.values() if row.labeller}),
            settled=labels.settled,
            unsettled=len(labels.unsettled),
            draw=check_draw(labels.draw, labels.design, set(labels.rows), self.population),
        )
        pairs = [(a, b) for a, b in labels.pairs if unit_of(a) in self.in_run]
        labellers = (
            labellers_agreement(
                pairs,
                self.policy,
                min_kappa=min_labeller_kappa,
                settled=labels.settled,
                unsettled=len(labels.unsettled),
            )
            if pairs
            else None
        )
        scorecards = correct_run(self.units, self.matched, design=labels.design, groups=self.groups)
        replies = (
            correct_run(self.reply_units, self.reply_matched, design=labels.design, groups=self.reply_groups)
            if self.reply_units
            else None
        )
        return Correction(labels=use, scorecards=scorecards, conversation_replies=replies, labellers=labellers)
