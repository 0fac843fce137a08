"""How well two labellings of the same replies agree (two people, or one person twice): the ceiling any
judge's measured agreement with either labelling can be read against, and how far the truth a
correction estimates is itself uncertain. Pure arithmetic.

For each field (response safety, answer mode, the assistant_policy_v2 policy label) and each prompt
domain: the rows both labelled, the share that agree with its 95% Wilson interval, and Cohen's kappa
with a 95% interval (`kappa_interval`). Replies are matched by unit (case id, and turn for a
conversation's reply)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, TypedDict

from pytest_guardbench.audit.labels import labelled_truth, unit_of
from pytest_guardbench.document.labelling import DomainAgreement, FieldAgreement, LabellersAgreement
from pytest_guardbench.errors import DataError
from pytest_guardbench.records import JudgeLabel
from pytest_guardbench.scoring.agreement import kappa_interval as wilson_kappa_interval
from pytest_guardbench.scoring.intervals import wilson_interval
from pytest_guardbench.scoring.policies import ScoringPolicy, assistant_policy_v2_label

FIELDS = ("safety", "answer_mode", "policy_label")
DOMAINS = ("harmful", "safe")


class LabellingMismatch(DataError):
    """The two files do not label the same responses."""


def kappa_interval(pairs: Sequence[tuple[object, object]]) -> tuple[float | None, float | None, float | None]:
    """(Cohen's kappa, low, high) over label pairs of any number of categories. The interval is the 95%
    Wilson interval of the observed agreement p_o mapped through kappa = (p_o - p_e) / (1 - p_e), with
    chance agreement p_e from the two labellers' marginals taken as known, clipped to [-1, 1]. Wilson
    stays inside [0, 1] and is never a point, so the interval is honest with few rows and with perfect
    agreement (20 of 20 agreeing, p_e 0.5: [0.68, 1]), where the usual normal approximation collapses to
    [1, 1]. All None when there are no pairs or kappa is undefined (p_e is 1: every row has one label
    on both sides)."""
    n = len(pairs)
    if n == 0:
        return None, None, None
    first, second = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    observed_count = sum(1 for a, b in pairs if a == b)
    chance = sum(first[c] * second[c] for c in first) / (n * n)
    if chance >= 1 - 1e-12:
        return None, None, None
    bounds = wilson_kappa_interval(observed_count / n, chance, n)
    assert bounds is not None
    kappa = max(-1.0, min(1.0, (observed_count / n - chance) / (1 - chance)))
    return round(kappa, 6), round(bounds[0], 6), round(bounds[1], 6)


class FieldRates(TypedDict):
    """`field_agreement`'s answer for one field, as `guardbench label-agreement --json` prints it."""

    rows: int
    agreement: float | None
    agreement_interval_95: tuple[float, float] | None
    cohen_kappa: float | None
    kappa_interval_95: list[float | None] | None


def field_agreement(pairs: Sequence[tuple[object, object]]) -> FieldRates:
    """Rows, agreement with its 95% Wilson interval, and kappa with its interval (`kappa_interval`)."""
    agreed = sum(1 for a, b in pairs if a == b)
    kappa, low, high = kappa_interval(pairs)
    return {
        "rows": len(pairs),
        "agreement": agreed / len(pairs) if pairs else None,
        "agreement_interval_95": wilson_interval(agreed, len(pairs)),
        "cohen_kappa": kappa,
        "kappa_interval_95": None if low is None else [low, high],
    }


def policy_label(label: JudgeLabel) -> str | None:
    return label.assistant_policy_label or assistant_policy_v2_label(
        label.is_harmful, label.human_label, label.answer_mode
    )


FIELD_OF: dict[str, Callable[[JudgeLabel], object]] = {
    "safety": lambda row: row.human_label,
    "answer_mode": lambda row: row.answer_mode,
    "policy_label": policy_label,
}


def _field_pairs(shared: Sequence[tuple[JudgeLabel, JudgeLabel]], field: str) -> list[tuple[object, object]]:
    value = FIELD_OF[field]
    return [(value(a), value(b)) for a, b in shared if value(a) is not None and value(b) is not None]


def _domain(a: JudgeLabel, b: JudgeLabel) -> str | None:
    harmful = a.is_harmful if a.is_harmful is not None else b.is_harmful
    return None if harmful is None else "harmful" if harmful else "safe"


def _by_unit(labels: Sequence[JudgeLabel], which: str) -> dict[str, JudgeLabel]:
    found: dict[str, JudgeLabel] = {}
    for label in labels:
        unit = unit_of(label)
        if unit in found:
            raise LabellingMismatch(f"the {which} file labels id {unit} twice")
        found[unit] = label
    return found


def _names(labels: Sequence[JudgeLabel]) -> list[str]:
    return sorted({label.labeller for label in labels if label.labeller})


def labeller_agreement(first: Sequence[JudgeLabel], second: Sequence[JudgeLabel]) -> dict[str, Any]:
    """Agreement on safety, answer mode and policy label, overall and per prompt domain (`domains`), over
    the units both files hold, each with rows, agreement and kappa with 95% intervals; and every
    disagreement with both labels. Rows of one file whose unit the other lacks are counted, not
    compared; a shared unit whose prompt or response differs is an error, since the two labels would
    not be of the same thing."""
    mine, theirs = _by_unit(first, "first"), _by_unit(second, "second")
    shared = [(row, theirs[unit]) for unit, row in mine.items() if unit in theirs]
    changed = [unit_of(a) for a, b in shared if (a.prompt, a.response) != (b.prompt, b.response)]
    if changed:
        raise LabellingMismatch(f"{len(changed)} shared ids label different text, first: {changed[0]}")
    result: dict[str, Any] = {
        "shared_rows": len(shared),
        "only_in_first": len(first) - len(shared),
        "only_in_second": len(second) - len(shared),
        "labellers": {"first": _names(first), "second": _names(second)},
        **{field: field_agreement(_field_pairs(shared, field)) for field in FIELDS},
    }
    result["domains"] = {
        domain: {
            field: field_agreement(_field_pairs([p for p in shared if _domain(*p) == domain], field))
            for field in FIELDS
        }
        for domain in DOMAINS
    }
    result["disagreements"] = [
        {
            "id": a.id,
            "unit": unit_of(a),
            "domain": _domain(a, b),
            "first": [a.human_label, a.answer_mode],
            "second": [b.human_label, b.answer_mode],
            "policy_label": [policy_label(a), policy_label(b)],
            "labellers": [a.labeller, b.labeller],
        }
        for a, b in shared
        if (a.human_label, a.answer_mode) != (b.human_label, b.answer_mode)
    ]
    return result


def _typed(pairs: Sequence[tuple[object, object]]) -> FieldAgreement:
    found = field_agreement(pairs)
    agreement_bounds = found["agreement_interval_95"] or (None, None)
    kappa_bounds = found["kappa_interval_95"] or (None, None)
    return FieldAgreement(
        rows=found["rows"],
        agreement=None if found["agreement"] is None else round(found["agreement"], 6),
        agreement_ci_low=agreement_bounds[0],
        agreement_ci_high=agreement_bounds[1],
        cohen_kappa=found["cohen_kappa"],
        kappa_ci_low=kappa_bounds[0],
        kappa_ci_high=kappa_bounds[1],
    )


def labellers_agreement(
    pairs: Sequence[tuple[JudgeLabel, JudgeLabel]],
    policy: ScoringPolicy,
    *,
    min_kappa: float,
    settled: int,
    unsettled: int,
) -> LabellersAgreement:
    """Two labellers of a run's replies (each pair: the first labelling's row and another's, of one
    reply of the run), per prompt domain, with `handled` (the run's policy's truth from each row) beside
    the three fields. A domain whose `handled` kappa is under `min_kappa` is a low one."""
    domains: dict[str, DomainAgreement] = {}
    for domain in DOMAINS:
        mine = [(a, b) for a, b in pairs if _domain(a, b) == domain]
        harmful = domain == "harmful"
        handled = [(labelled_truth(a, harmful, policy), labelled_truth(b, harmful, policy)) for a, b in mine]
        domains[domain] = DomainAgreement(
            **{field: _typed(_field_pairs(mine, field)) for field in FIELDS},
            handled=_typed([(x, y) for x, y in handled if x is not None and y is not None]),
        )
    low = [
        name
        for name, block in domains.items()
        if block.handled.cohen_kappa is not None and block.handled.cohen_kappa < min_kappa
    ]
    return LabellersAgreement(
        labellers=sorted({row.labeller or "(unnamed)" for pair in pairs for row in pair}),
        rows=len(pairs),
        settled=settled,
        unsettled=unsettled,
        min_kappa=min_kappa,
        domains=domains,
        low_domains=low,
    )
