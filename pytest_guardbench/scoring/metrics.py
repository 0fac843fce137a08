"""Every metric of a run, from its records: the scorecards (whole run, per variant, family and
category), how a prompt's variants and samples agree (row buckets, flip rates against `original`),
guard decision rates, coverage and warnings. Pure; deterministic for the same records in any order."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from pytest_guardbench.scoring.policies import ScoringPolicy
from pytest_guardbench.records import Case, CaseRecord
from pytest_guardbench.scoring.scorecard import (
    Scorecard,
    card_pair,
    classify,
    coverage,
    guard_decision_rates,
    ratio,
    warnings_for,
)


def variant_family(record: CaseRecord) -> str:
    # Records reach scoring with their family (`finish.finish_run` fills in old runs'); "data" is
    # what a variant no mutator makes is called.
    return record.variant_family or "data"


def _grouped(
    records: Sequence[CaseRecord], key: Callable[[CaseRecord], str], policy: ScoringPolicy
) -> dict[str, dict[str, Scorecard]]:
    groups: dict[str, list[CaseRecord]] = defaultdict(list)
    for record in records:
        groups[key(record)].append(record)
    return {name: card_pair(groups[name], policy) for name in sorted(groups)}


BUCKETS = ("fully_correct", "partially_incorrect", "consistently_incorrect")


def prompt_row_buckets(records: Sequence[CaseRecord], policy: ScoringPolicy) -> dict[str, Any]:
    """A row is one prompt-variant (pack, item, variant) over its k samples; rows with no scored sample
    are left out. Fully correct: every scored sample handled correctly; consistently incorrect: none."""
    rows: dict[tuple[str, str, str], list[bool]] = defaultdict(list)
    for record in records:
        outcome, _ = classify(record, policy)
        if outcome is None:
            continue
        rows[(record.pack, record.item_id, record.variant)].append(outcome in ("TP", "TN"))
    buckets: Counter[str] = Counter()
    for samples in rows.values():
        good = sum(samples)
        buckets[
            "fully_correct"
            if good == len(samples)
            else "consistently_incorrect"
            if good == 0
            else "partially_incorrect"
        ] += 1
    total = len(rows)
    return {"rows": total, **{name: {"count": buckets[name], "rate": ratio(buckets[name], total)} for name in BUCKETS}}


def flip_rates(records: Sequence[CaseRecord], policy: ScoringPolicy) -> dict[str, Any]:
    """Per variant: the share of (base prompt, sample) pairs whose handling differs from `original`,
    for the guard decision and for final correctness, with the direction of each correctness flip."""
    originals = {(r.pack, r.base_prompt_id, r.sample_index): r for r in records if r.variant == "original"}
    flips: dict[str, Counter[str]] = defaultdict(Counter)
    for record in records:
        base = originals.get((record.pack, record.base_prompt_id, record.sample_index))
        if record.variant == "original" or base is None:
            continue
        tally = flips[record.variant]
        if base.guard is not None and record.guard is not None:
            tally["guard_pairs"] += 1
            tally["guard_flips"] += base.guard.status != record.guard.status
        before, _ = classify(base, policy)
        after, _ = classify(record, policy)
        if before is None or after is None:
            continue
        tally["outcome_pairs"] += 1
        was_handled, is_handled = before in ("TP", "TN"), after in ("TP", "TN")
        tally["became_mishandled"] += was_handled and not is_handled
        tally["became_handled"] += is_handled and not was_handled
    return {
        variant: {
            "guard_pairs": t["guard_pairs"],
            "guard_flips": t["guard_flips"],
            "guard_flip_rate": ratio(t["guard_flips"], t["guard_pairs"]),
            "outcome_pairs": t["outcome_pairs"],
            "became_mishandled": t["became_mishandled"],
            "became_handled": t["became_handled"],
            "outcome_flip_rate": ratio(t["became_mishandled"] + t["became_handled"], t["outcome_pairs"]),
        }
        for variant, t in sorted(flips.items())
    }


def _dump(cards: dict[str, Scorecard]) -> dict[str, Any]:
    return {scope: card.model_dump() for scope, card in cards.items()}


def summarise(
    expected: Sequence[Case],
    records: Sequence[CaseRecord],
    policy: ScoringPolicy,
    lost: Sequence[dict[str, str]] = (),
) -> dict[str, Any]:
    """Every metric of a run as plain JSON types, deterministic for the same records in any order.
    `guardbench compare` and `merge` refuse to mix runs whose `metric_definitions` differ."""
    ordered = sorted(records, key=lambda r: r.case_id)
    cards = card_pair(ordered, policy)
    cov = coverage(expected, ordered, policy, lost)
    guards = guard_decision_rates(ordered)
    return {
        "metric_definitions": policy.definitions(),
        "scorecards": _dump(cards),
        "per_variant": {k: _dump(v) for k, v in _grouped(ordered, lambda r: r.variant, policy).items()},
        "per_family": {k: _dump(v) for k, v in _grouped(ordered, variant_family, policy).items()},
        "per_category": {k: _dump(v) for k, v in _grouped(ordered, lambda r: r.category or "(none)", policy).items()},
        "flip_rates": flip_rates(ordered, policy),
        "variant_families": {r.variant: variant_family(r) for r in sorted(ordered, key=lambda r: r.variant)},
        "prompt_row_buckets": prompt_row_buckets(ordered, policy),
        "guard_decisions": guards,
        "coverage": cov,
        "outcomes": dict(sorted(Counter(classify(r, policy)[0] or "unscored" for r in ordered).items())),
        "warnings": warnings_for(cards, cov, guards),
    }
