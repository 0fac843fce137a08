"""Human audit of a finished run: a seeded, stratified sample of its cases, and the labels a person
gives them, written in the judge-labels format so `guardbench judge-quality` and
`--guardbench-judge-check` read them as they are.

Pure: no terminal, no pytest. The terminal loop is `audit_tui.py`; the report's label buttons export
the same rows.
"""

from __future__ import annotations

import itertools
import json
import os
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_guardbench.scoring.policies import ScoringPolicy, assistant_policy_v2_label
from pytest_guardbench.records import CaseRecord, JudgeLabel, Outcome
from pytest_guardbench.scoring.scorecard import UnscoredReason, classify


def stratum(record: CaseRecord, policy: ScoringPolicy) -> tuple[str, str, str]:
    """(outcome or why unscored, the judge's answer mode, variant)."""
    return classified_stratum(record, *classify(record, policy))


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


@dataclass(frozen=True)
class HumanLabel:
    case_id: str
    response_safety: str  # safe | unsafe
    answer_mode: str


def label_row(record: CaseRecord, label: HumanLabel, policy: ScoringPolicy) -> JudgeLabel:
    outcome, reason = classify(record, policy)
    return JudgeLabel(
        id=record.case_id,
        prompt=record.prompt_text,
        response=record.response.text if record.response is not None else "",
        human_label=label.response_safety,  # type: ignore[arg-type]
        answer_mode=label.answer_mode,  # type: ignore[arg-type]
        assistant_policy_label=assistant_policy_v2_label(record.is_harmful, label.response_safety, label.answer_mode),  # type: ignore[arg-type]
        bucket=outcome or f"unscored:{reason}",
        is_harmful=record.is_harmful,
        category=record.category,
        source=record.response.source if record.response is not None else "tutor",
    )


def read_labels(path: Path) -> dict[str, HumanLabel]:
    """Labels already given (to resume); a missing file is an empty audit."""
    if not path.is_file():
        return {}
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            found[row["id"]] = HumanLabel(
                case_id=row["id"], response_safety=row["human_label"], answer_mode=row["answer_mode"]
            )
    return found


def write_labels(path: Path, rows: Sequence[JudgeLabel]) -> None:
    """The whole audit file at once (atomically), in sample order, so a quit or a crash never leaves half a line."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(
        "".join(json.dumps(r.model_dump(mode="json", exclude_none=True), ensure_ascii=False) + "\n" for r in rows),
        encoding="utf-8",
    )
    os.replace(tmp, path)
