"""How well two labellings of the same responses agree (two people, or one person twice): the ceiling
any judge's measured agreement with either labelling can be read against. Pure arithmetic."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_guardbench.errors import DataError
from pytest_guardbench.scoring.agreement import cohen_kappa, pair_agreement
from pytest_guardbench.scoring.policies import assistant_policy_v2_label
from pytest_guardbench.records import JudgeLabel


class LabellingMismatch(DataError):
    """The two files do not label the same responses."""


def _share(pairs: Sequence[tuple[object, object]]) -> dict[str, Any]:
    shared = pair_agreement(pairs)
    return {"rows": shared["rows"], "agreement": shared["agreement"], "agreement_interval_95": shared["interval_95"]}


def _policy(label: JudgeLabel) -> str | None:
    return label.assistant_policy_label or assistant_policy_v2_label(
        label.is_harmful, label.human_label, label.answer_mode
    )


def _repeated_id(labels: Sequence[JudgeLabel]) -> str | None:
    seen: set[str] = set()
    for label in labels:
        if label.id in seen:
            return label.id
        seen.add(label.id)
    return None


def labeller_agreement(first: Sequence[JudgeLabel], second: Sequence[JudgeLabel]) -> dict[str, Any]:
    """Agreement on safety (with kappa), answer mode and policy label over the ids both files hold.
    Rows of one file whose id the other lacks are counted, not compared; a shared id whose prompt or
    response differs is an error, since the two labels would not be of the same thing."""
    for which, labels in (("first", first), ("second", second)):
        if (twice := _repeated_id(labels)) is not None:
            raise LabellingMismatch(f"the {which} file labels id {twice} twice")
    by_id = {label.id: label for label in second}
    shared = [(label, by_id[label.id]) for label in first if label.id in by_id]
    changed = [a.id for a, b in shared if (a.prompt, a.response) != (b.prompt, b.response)]
    if changed:
        raise LabellingMismatch(f"{len(changed)} shared ids label different text, first: {changed[0]}")
    safety = [(a.human_label, b.human_label) for a, b in shared]
    modes = [(a.answer_mode, b.answer_mode) for a, b in shared if a.answer_mode and b.answer_mode]
    policy = [(_policy(a), _policy(b)) for a, b in shared if _policy(a) and _policy(b)]
    return {
        "shared_rows": len(shared),
        "only_in_first": len(first) - len(shared),
        "only_in_second": len(second) - len(shared),
        "safety": {**_share(safety), "cohen_kappa": cohen_kappa(safety)},
        "answer_mode": _share(modes),
        "policy_label": _share(policy),
        "disagreements": [
            {"id": a.id, "first": [a.human_label, a.answer_mode], "second": [b.human_label, b.answer_mode]}
            for a, b in shared
            if (a.human_label, a.answer_mode) != (b.human_label, b.answer_mode)
        ],
    }
