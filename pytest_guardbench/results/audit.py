"""Human audit of a finished run: a seeded sample of its cases, and the labels a person gives them,
written in the judge-labels format so `guardbench correct`, `guardbench judge-quality` and
`--guardbench-judge-check` read them as they are.

Designs: `random` (uniform over the run's judged replies: a single prompt's, or each of a
conversation's, `scoring.audit_units`) and `stratified` (prompt label x
the judge's verdict, oversampling where the judge is likely wrong) draw with known inclusion
probabilities, which every label row records, so the labels can correct the scorecards. `debug`
(one case from each outcome x answer mode x variant in turn) finds failures fast, but its inclusion
probabilities are unknown and `correct` refuses it.

Pure: no terminal, no pytest. The terminal loop is `audit_tui.py`; the report's label buttons export
the same rows.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import random
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from pytest_guardbench.errors import DataError

from pytest_guardbench.records import AuditDesign, CaseRecord, JudgeLabel, Outcome
from pytest_guardbench.scoring.audit_design import DrawnUnit, draw_random, draw_stratified, stratum_of
from pytest_guardbench.scoring.audit_correction import AuditUnit
from pytest_guardbench.scoring.audit_units import labelled_replies, reply_unit_id, split_unit_id
from pytest_guardbench.scoring.policies import ScoringPolicy, assistant_policy_v2_label
from pytest_guardbench.scoring.scorecard import UnscoredReason, score_record


def stratum(record: CaseRecord, policy: ScoringPolicy) -> tuple[str, str, str]:
    """(outcome or why unscored, the judge's answer mode, variant)."""
    return classified_stratum(record, *score_record(record, policy))


def classified_stratum(
    record: CaseRecord, outcome: Outcome | None, reason: UnscoredReason | None
) -> tuple[str, str, str]:
    """`stratum` of a record already classified."""
    mode = record.judge.answer_mode if record.judge is not None and record.judge.answer_mode else "none"
    return (outcome or f"unscored:{reason}", mode, record.variant)


def draw_sample(records: Sequence[CaseRecord], n: int, seed: int, policy: ScoringPolicy) -> list[CaseRecord]:
    """Up to `n` cases with a response, stratified: the outcomes (TP, FP, TN, FN, and each reason a
    case went unscored) take turns, and within an outcome its (answer mode, variant) groups take turns,
    cases shuffled within each group by `seed`. So a small sample holds every outcome, and rare modes
    and variants come before common ones fill the rest. The same records, n and seed give the same sample."""
    groups: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    by_id = {}
    for record in records:
        if record.response is not None:
            groups[stratum(record, policy)].append(record.case_id)
            by_id[record.case_id] = record
    return [by_id[case_id] for case_id in draw_ids(groups, n, seed)]


def _turns(queues: list[list[str]]) -> list[str]:
    """The queues' members, one from each queue in turn until all are empty."""
    merged: list[str] = []
    for round_ in itertools.zip_longest(*queues):
        merged.extend(case_id for case_id in round_ if case_id is not None)
    return merged


def draw_ids(groups: Mapping[tuple[str, str, str], Sequence[str]], n: int, seed: int) -> list[str]:
    """`draw_sample` over case ids grouped by stratum (in any order), for callers that keep ids, not records."""
    rng = random.Random(seed)
    by_outcome: dict[str, list[list[str]]] = defaultdict(list)
    for key in sorted(groups):
        members = sorted(groups[key])
        rng.shuffle(members)
        by_outcome[key[0]].append(members)
    # Turns by outcome first: with turns over every (outcome, mode, variant) group, the outcomes with
    # many groups (the failures: several modes x every variant) would fill a small sample alone.
    return _turns([_turns(by_outcome[outcome]) for outcome in sorted(by_outcome, key=_outcome_order)])[:n]


def _outcome_order(outcome: str) -> tuple[int, str]:
    return (OUTCOME_ORDER.index(outcome), "") if outcome in OUTCOME_ORDER else (len(OUTCOME_ORDER), outcome)


OUTCOME_ORDER = ("FN", "FP", "TN", "TP")


def audit_units(records: Sequence[CaseRecord], policy: ScoringPolicy) -> list[tuple[CaseRecord, AuditUnit]]:
    """The replies a design draws from (`scoring.audit_units`), each with the judge's verdict under
    `policy`, as a record a person can label: a conversation's reply is shown as the child's message at
    its turn and the reply to it, under the unit id `<case id>@<turn>`."""
    units = []
    for record in records:
        for reply in labelled_replies(record, policy):
            unit = AuditUnit(
                unit_id=reply.unit_id,
                is_harmful=reply.is_harmful,
                tutor_ran=reply.tutor_ran,
                judge_handled=reply.judge_handled,
            )
            view = (
                record
                if reply.turn is None
                else record.model_copy(
                    update={
                        "case_id": reply.unit_id,
                        "prompt_text": reply.prompt,
                        "response": reply.reply,
                        "judge": reply.verdict,
                        "turns": (),
                        "is_harmful": reply.is_harmful,
                        "tutor_ran": reply.tutor_ran,
                    }
                )
            )
            units.append((view, unit))
    return units


def draw_design(
    records: Sequence[CaseRecord], design: AuditDesign, n: int, seed: int, policy: ScoringPolicy
) -> list[tuple[CaseRecord, DrawnUnit | None]]:
    """`n` cases to label under `design`, each with how it was drawn (None under `debug`)."""
    if design == "debug":
        return [(record, None) for record in draw_sample(records, n, seed, policy)]
    units = audit_units(records, policy)
    by_id = {unit.unit_id: record for record, unit in units}
    if design == "random":
        drawn = draw_random(sorted(by_id), n, seed)
    else:
        drawn = draw_stratified([(u.unit_id, stratum_of(u.is_harmful, u.judge_handled)) for _, u in units], n, seed)
    return [(by_id[unit.unit_id], unit) for unit in drawn]


# The offline judges state their probabilities in the reason: "answered (p=0.48); P(unsafe)=0.07".
_STATED = re.compile(r"^(?P<mode>[a-z_]+) \(p=(?P<mode_p>[0-9.]+)\); P\(unsafe\)=(?P<unsafe>[0-9.]+)")


def judge_probability(record: CaseRecord, policy: ScoringPolicy) -> float | None:
    """The judge's own probability that the case was handled correctly, where it states one (the
    offline judges do, in their reason); None otherwise. A harmful prompt is handled when the reply is
    safe: 1 - P(unsafe). A safe prompt also needs an answer: (1 - P(unsafe)) x P(answered), known only
    when the judge's answer mode is "answered". Under a policy where harmful prompts must not be
    answered, or for a verdict without the stated form, None: the plan then uses a prior instead."""
    verdict = record.judge
    stated = _STATED.match(verdict.reason) if verdict is not None else None
    if stated is None or record.is_harmful is None or policy.harmful_must_not_answer:
        return None
    safe = 1 - float(stated["unsafe"])
    if record.is_harmful:
        return safe
    return safe * float(stated["mode_p"]) if stated["mode"] == "answered" else None


@dataclass(frozen=True)
class HumanLabel:
    case_id: str
    response_safety: str  # safe | unsafe
    answer_mode: str


def label_row(
    record: CaseRecord, label: HumanLabel, policy: ScoringPolicy, drawn: DrawnUnit | None = None
) -> JudgeLabel:
    """The labels file's row for `record`: the person's labels and, for a design draw, how it was
    drawn and a hash of the reply it labels (so a label of a reply that changed is never used)."""
    outcome, reason = score_record(record, policy)
    reply = record.response.text if record.response is not None else ""
    if drawn is not None:
        design: dict[str, object] = {
            "design": "random" if drawn.stratum == "random" else "stratified",
            "stratum": drawn.stratum,
            "inclusion_probability": drawn.inclusion_probability,
            "reply_sha256": hashlib.sha256(reply.encode("utf-8")).hexdigest(),
            # The judge's verdict must not ride along with a blind draw's rows: the bucket is the variant.
            "bucket": record.variant,
        }
    else:
        design = {"design": "debug", "bucket": outcome or f"unscored:{reason}"}
    case_id, turn = split_unit_id(record.case_id)
    return JudgeLabel(
        id=case_id,
        turn=turn,
        prompt=record.prompt_text,
        response=record.response.text if record.response is not None else "",
        human_label=label.response_safety,  # type: ignore[arg-type]
        answer_mode=label.answer_mode,  # type: ignore[arg-type]
        assistant_policy_label=assistant_policy_v2_label(record.is_harmful, label.response_safety, label.answer_mode),  # type: ignore[arg-type]
        is_harmful=record.is_harmful,
        category=record.category,
        source=record.response.source if record.response is not None else "tutor",
        finish_reason=record.response.finish_reason if record.response is not None else None,
        **design,  # type: ignore[arg-type]
    )


def read_labels(path: Path) -> dict[str, HumanLabel]:
    """Labels already given (to resume); a missing file is an empty audit. `DataError` naming the file
    and line for a row that is not a label (a file cut short, edited, or of another format)."""
    if not path.is_file():
        return {}
    found = {}
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise DataError("not UTF-8 text; move the file aside or fix it", path=path) from None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = JudgeLabel.model_validate(json.loads(line))
        except (ValueError, ValidationError) as exc:
            raise DataError(
                f"not a label row ({str(exc).splitlines()[0][:200]}); move the file aside or fix the line",
                path=path,
                line=number,
            ) from None
        if row.answer_mode is None:
            raise DataError("a label row needs an answer_mode", path=path, line=number)
        unit = reply_unit_id(row.id, row.turn)
        found[unit] = HumanLabel(case_id=unit, response_safety=row.human_label, answer_mode=row.answer_mode)
    return found


def write_labels(path: Path, rows: Sequence[JudgeLabel]) -> None:
    """The whole audit file at once (atomically), in sample order, so a quit or a crash never leaves half a line."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(
        "".join(json.dumps(r.model_dump(mode="json", exclude_none=True), ensure_ascii=False) + "\n" for r in rows),
        encoding="utf-8",
    )
    os.replace(tmp, path)
