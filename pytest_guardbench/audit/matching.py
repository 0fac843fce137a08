"""A labels file matched to a run's records as they stream through the finish: every case of the run
becomes a unit of the correction (`units`), and a labelled one its truth (`labels`). A reply the judge
left unscored is a unit with no verdict, and its label counts; a case with no reply is a unit known
not handled. Single-prompt cases correct the scorecards; a conversation's replies are corrected as
replies, per depth; under the `cluster` design, whose rows label every reply of a drawn conversation,
the conversations are corrected as conversations too. A label of a reply that changed since it was
labelled measures something else: it is dropped and counted."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from pytest_guardbench.audit.agreement import labellers_agreement
from pytest_guardbench.audit.conversations import (
    ConversationLabel,
    ConversationUnit,
    conversation_truth,
    conversation_unit,
    correct_conversations,
    label_verdict,
)
from pytest_guardbench.audit.correction import correct_run
from pytest_guardbench.audit.draw_record import PopulationUnit, check_draw
from pytest_guardbench.audit.labels import RunLabels, labelled_truth, reply_sha256, unit_of
from pytest_guardbench.audit.units import AuditLabel, AuditUnit, LabelledReply, labelled_replies, unanswered_unit
from pytest_guardbench.document.correction import CorrectedConversations, Correction, LabelUse
from pytest_guardbench.records import CaseRecord, JudgeLabel
from pytest_guardbench.scoring.policies import ScoringPolicy
from pytest_guardbench.scoring.scorecard import Scored

# Designs whose rows carry the inclusion probability the correction must use (a random draw's is
# the same n / N for every unit and is worked out from the run).
_ROWS_CARRY_PROBABILITY = ("stratified", "cluster")


@dataclass
class LabelMatcher:
    """The finish's view of a labels file: every case of the run becomes a unit of the correction
    (`audit.units`), and a labelled one its truth. Holds one small unit per reply (no text)."""

    labels: RunLabels
    policy: ScoringPolicy
    units: list[AuditUnit] = field(default_factory=list)
    matched: list[AuditLabel] = field(default_factory=list)
    groups: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    reply_units: list[AuditUnit] = field(default_factory=list)
    reply_matched: list[AuditLabel] = field(default_factory=list)
    reply_groups: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    conversations: list[ConversationUnit] = field(default_factory=list)
    conversation_labels: dict[str, ConversationLabel] = field(default_factory=dict)
    partly_labelled: int = 0
    reply_changed: int = 0
    undecided: int = 0
    # Every unit of the run as the labels' draw sees it (no text), to draw again and compare.
    population: list[PopulationUnit] = field(default_factory=list)
    # The units whose label rows match a reply of this run, for the labellers' agreement.
    in_run: set[str] = field(default_factory=set)

    def add(self, record: CaseRecord, scored: Scored) -> None:
        replies = labelled_replies(record, self.policy, scored)
        rows: list[tuple[LabelledReply, JudgeLabel | None]] = []
        for reply in replies:
            unit = AuditUnit(
                unit_id=reply.unit_id,
                is_harmful=reply.is_harmful,
                tutor_ran=reply.tutor_ran,
                judge_handled=reply.judge_handled,
            )
            self.population.append(
                PopulationUnit(reply.unit_id, reply_sha256(reply.reply.text), reply.is_harmful, reply.judge_handled)
            )
            row, label = self._label(reply)
            rows.append((reply, row if label is not None else None))
            if reply.turn is None:
                self._single(record, unit)
                matched = self.matched
            else:
                self.reply_units.append(unit)
                self.reply_groups[f"depth={reply.turn}"].append(unit.unit_id)
                matched = self.reply_matched
            if label is not None:
                matched.append(label)
        unanswered = unanswered_unit(record)
        if unanswered is not None and not record.turns:
            self._single(record, unanswered)
        if record.turns:
            self._conversation(record, scored, rows)

    def _single(self, record: CaseRecord, unit: AuditUnit) -> None:
        self.units.append(unit)
        self.groups[f"variant={record.variant}"].append(unit.unit_id)
        self.groups[f"category={(record.category or '(none)').lower()}"].append(unit.unit_id)

    def _conversation(
        self, record: CaseRecord, scored: Scored, rows: list[tuple[LabelledReply, JudgeLabel | None]]
    ) -> None:
        unit = conversation_unit(record, scored, [reply.unit_id for reply, _ in rows])
        if unit is None:
            return
        self.conversations.append(unit)
        used = [(reply, row) for reply, row in rows if row is not None]
        if not used or self.labels.design != "cluster" or record.is_harmful is None:
            return
        if len(used) < len(rows):
            self.partly_labelled += 1
            return
        handled, stop = conversation_truth(
            record.is_harmful, [(reply.turn or 0, label_verdict(row)) for reply, row in used], self.policy
        )
        probability = used[0][1].inclusion_probability
        if handled is None or probability is None:
            self.partly_labelled += 1
            return
        self.conversation_labels[record.case_id] = ConversationLabel(handled, stop, probability)

    def _label(self, reply: LabelledReply) -> tuple[JudgeLabel | None, AuditLabel | None]:
        row = self.labels.rows.get(reply.unit_id)
        if row is None:
            return None, None
        if (row.reply_sha256 or reply_sha256(row.response)) != reply_sha256(reply.reply.text):
            self.reply_changed += 1
            return None, None
        self.in_run.add(reply.unit_id)
        truth = labelled_truth(row, reply.is_harmful, self.policy)
        if truth is None:
            self.undecided += 1
            return None, None
        carried = self.labels.design in _ROWS_CARRY_PROBABILITY
        return row, AuditLabel(
            unit_id=reply.unit_id,
            handled=truth,
            stratum=row.stratum if carried else None,
            inclusion_probability=row.inclusion_probability if carried else None,
        )

    def _conversations(self) -> CorrectedConversations | None:
        if self.labels.design != "cluster" or not self.conversations:
            return None
        return correct_conversations(
            self.conversations, self.conversation_labels, design="cluster", partly_labelled=self.partly_labelled
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
        return Correction(
            labels=use,
            scorecards=scorecards,
            conversation_replies=replies,
            labellers=labellers,
            conversations=self._conversations(),
        )
