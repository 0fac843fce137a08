"""Which of a run's replies a person labels: three audit designs, each drawn with a known inclusion
probability per reply, so that `audit.estimator` can weight the labels back to the whole run.

- `random`: `draw_random`, uniform without replacement over every reply of the run.
- `stratified`: `draw_stratified`, strata = the prompt's label x the judge's verdict (handled,
  mishandled, or no usable verdict), each stratum drawn uniformly without replacement at its own rate.
- `cluster`: `draw_cluster`, uniform without replacement over the run's cases, every reply of a drawn
  case labelled (a conversation whole; a single prompt is a case of one reply), so that conversations
  can be corrected as conversations.

Seeded by `random.Random(seed)` alone, over ids sorted first, so the same ids, sizes and seed give
the same sample on every machine and under any `PYTHONHASHSEED`. The drawn list is shuffled as a
whole, so a labeller working down it cannot tell a case's stratum (which would reveal the judge's
verdict) from its place in the list.
"""

from __future__ import annotations

from pytest_guardbench.records import AuditDesign
from pytest_guardbench.records import CaseRecord
from pytest_guardbench.records import Outcome
from pytest_guardbench.scoring.policies import ScoringPolicy
from pytest_guardbench.scoring.scorecard import UnscoredReason
from pytest_guardbench.audit.units import audit_units, split_unit_id
from pytest_guardbench.document.correction import Design
from collections import defaultdict
import itertools
from pytest_guardbench.scoring.scorecard import score_record

import heapq
import math
import random
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from pytest_guardbench.errors import InternalError, UsageError


# The judge's three verdicts as a stratum suffix: handled correctly, mishandled, no usable verdict.
HANDLED, MISHANDLED, NO_VERDICT = "handled", "mishandled", "no_verdict"
# The stratum every unit of the random and of the cluster design is in.
RANDOM, CLUSTER = "random", "cluster"

# Prior probability that the judge's verdict is wrong, per verdict, for the default allocation. Most
# replies are handled, so "mishandled" is the judge's minority verdict, and by base rates a minority
# verdict is wrong more often than the majority one; with no verdict the truth is a coin toss.
PRIOR_ERROR: Mapping[str, float] = {HANDLED: 0.1, MISHANDLED: 0.3, NO_VERDICT: 0.5}
MIN_PER_STRATUM = 2


class DrawnUnit(BaseModel):
    """One case drawn for labelling: its stratum (`"random"` under the random design) and the
    probability that the design draws it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    unit_id: str
    stratum: str
    inclusion_probability: float

    @property
    def design(self) -> Design:
        """The design that drew it, as its stratum says: `random`, `cluster`, or a stratum of `stratified`."""
        if self.stratum == RANDOM:
            return "random"
        return "cluster" if self.stratum == CLUSTER else "stratified"


def stratum_of(is_harmful: bool, judge_handled: bool | None) -> str:
    """The stratified design's stratum: `harmful:handled`, `safe:mishandled`, `harmful:no_verdict`..."""
    verdict = NO_VERDICT if judge_handled is None else HANDLED if judge_handled else MISHANDLED
    return f"{'harmful' if is_harmful else 'safe'}:{verdict}"


def _verdict(stratum: str) -> str:
    return stratum.rsplit(":", 1)[-1]


def _sorted_unique(unit_ids: Sequence[str]) -> list[str]:
    ordered = sorted(unit_ids)
    for first, second in zip(ordered, ordered[1:]):
        if first == second:
            raise InternalError(f"unit id {first!r} occurs twice")
    return ordered


def draw_cluster(unit_cases: Sequence[tuple[str, str]], n: int, seed: int) -> list[DrawnUnit]:
    """`n` cases (all of them when there are fewer), uniform without replacement, each with every one of
    its units: `unit_cases` is (unit id, case id) pairs, a conversation's replies sharing its case id.
    Each unit has inclusion probability n / N, N the number of cases. The drawn cases come in a
    shuffled order, each case's units in the order given (a conversation's replies by depth)."""
    if n < 0:
        raise UsageError(f"sample size must be >= 0, got {n}")
    _sorted_unique([unit_id for unit_id, _ in unit_cases])
    members: dict[str, list[str]] = {}
    for unit_id, case_id in unit_cases:
        members.setdefault(case_id, []).append(unit_id)
    cases = sorted(members)
    take = min(n, len(cases))
    chosen = random.Random(seed).sample(cases, take)
    probability = take / len(cases) if cases else 0.0
    return [
        DrawnUnit(unit_id=unit_id, stratum=CLUSTER, inclusion_probability=probability)
        for case_id in chosen
        for unit_id in members[case_id]
    ]


def draw_random(unit_ids: Sequence[str], n: int, seed: int) -> list[DrawnUnit]:
    """`n` of the ids (all of them when there are fewer), uniform without replacement; each has
    inclusion probability n / N."""
    if n < 0:
        raise UsageError(f"sample size must be >= 0, got {n}")
    ids = _sorted_unique(unit_ids)
    take = min(n, len(ids))
    chosen = random.Random(seed).sample(ids, take)
    probability = take / len(ids) if ids else 0.0
    return [DrawnUnit(unit_id=unit_id, stratum=RANDOM, inclusion_probability=probability) for unit_id in chosen]


def default_allocation(
    stratum_sizes: Mapping[str, int],
    n: int,
    prior_error: Mapping[str, float] | None = None,
    min_per_stratum: int = MIN_PER_STRATUM,
) -> dict[str, int]:
    """How many of `n` labels each stratum gets, by the default rule.

    Every non-empty stratum first gets `min_per_stratum` (or all its cases, if fewer), so that each
    one's disagreement rate can be estimated at all. Each further label then goes, one at a time, to
    the stratum where it most reduces the summed variance of the two corrected rates (recall over the
    harmful strata, FPR over the safe ones): Var = sum over strata of (N_h / N_domain)^2 * S_h^2 *
    (1/n_h - 1/N_h), where S_h^2 = e(1 - e) and e is the prior probability that the judge is wrong in
    the stratum (`PRIOR_ERROR` by its verdict, unless `prior_error` maps the stratum or its verdict to
    another). This greedy rule gives the optimal integer (Neyman) allocation with caps; within a domain
    it puts labels where the judge is likely wrong, and it splits them between the two domains so
    that both rates get precision, not in proportion to their sizes. When `n` cannot give every
    stratum its minimum, the strata take turns, one label each, the largest N_h * S_h first. Ties
    go to the stratum name that sorts first.
    """
    if n < 0:
        raise UsageError(f"sample size must be >= 0, got {n}")
    priors = {**PRIOR_ERROR, **(prior_error or {})}
    strata = sorted(name for name, size in stratum_sizes.items() if size > 0)
    domain_size: dict[str, int] = {}
    for name in strata:
        domain = name.split(":", 1)[0]
        domain_size[domain] = domain_size.get(domain, 0) + stratum_sizes[name]

    def spread(name: str) -> float:
        error = priors.get(name, priors.get(_verdict(name), PRIOR_ERROR[NO_VERDICT]))
        if not 0.0 <= error <= 1.0:
            raise UsageError(f"prior error rate for {name!r} must be in [0, 1], got {error}")
        # A prior of exactly 0 or 1 would never earn a label beyond the minimum; keep a sliver.
        return math.sqrt(max(error * (1 - error), 1e-6))

    sizes = {name: stratum_sizes[name] for name in strata}
    allocation = {name: 0 for name in strata}
    if n >= sum(sizes.values()):
        return dict(sizes)
    minimums = {name: min(min_per_stratum, sizes[name]) for name in strata}
    left = n
    by_priority = sorted(strata, key=lambda name: (-sizes[name] * spread(name), name))
    while left > 0 and any(allocation[name] < minimums[name] for name in strata):
        for name in by_priority:
            if left > 0 and allocation[name] < minimums[name]:
                allocation[name] += 1
                left -= 1
    weight = {name: (sizes[name] / domain_size[name.split(":", 1)[0]]) ** 2 * spread(name) ** 2 for name in strata}

    def gain(name: str) -> float:
        return weight[name] / max(allocation[name] * (allocation[name] + 1), 1e-12)

    # Largest gain first; on equal gains the name that sorts first.
    queue = [(-gain(name), name) for name in strata if allocation[name] < sizes[name]]
    heapq.heapify(queue)
    while left > 0:
        _, best = heapq.heappop(queue)
        allocation[best] += 1
        left -= 1
        if allocation[best] < sizes[best]:
            heapq.heappush(queue, (-gain(best), best))
    return allocation


def draw_stratified(
    units_with_stratum: Sequence[tuple[str, str]],
    allocation: Mapping[str, int] | int,
    seed: int,
    prior_error: Mapping[str, float] | None = None,
) -> list[DrawnUnit]:
    """Draw each stratum uniformly without replacement: `units_with_stratum` is (unit id, stratum)
    pairs (`stratum_of` names the strata); `allocation` maps stratum -> sample size, or is a total
    that `default_allocation` splits. Each drawn unit carries its stratum and n_h / N_h."""
    members: dict[str, list[str]] = {}
    for unit_id, stratum in units_with_stratum:
        members.setdefault(stratum, []).append(unit_id)
    _sorted_unique([unit_id for unit_id, _ in units_with_stratum])
    sizes = {name: len(ids) for name, ids in members.items()}
    if isinstance(allocation, int):
        plan = default_allocation(sizes, allocation, prior_error)
    else:
        unknown = sorted(set(allocation) - set(sizes))
        if unknown:
            raise UsageError(f"allocation names strata with no units: {', '.join(unknown)}")
        plan = {}
        for name, size in allocation.items():
            if not 0 <= size <= sizes[name]:
                raise UsageError(f"stratum {name!r} has {sizes[name]} units; cannot draw {size}")
            plan[name] = size
    rng = random.Random(seed)
    drawn: list[DrawnUnit] = []
    for name in sorted(members):
        take = plan.get(name, 0)
        probability = take / sizes[name]
        for unit_id in rng.sample(sorted(members[name]), take):
            drawn.append(DrawnUnit(unit_id=unit_id, stratum=name, inclusion_probability=probability))
    rng.shuffle(drawn)
    return drawn


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


def draw_design(
    records: Sequence[CaseRecord], design: AuditDesign, n: int, seed: int, policy: ScoringPolicy
) -> list[tuple[CaseRecord, DrawnUnit | None]]:
    """Replies to label under `design`, each with how it was drawn (None under `debug`): `n` replies,
    or under `cluster` every reply of `n` cases."""
    if design == "debug":
        return [(record, None) for record in draw_sample(records, n, seed, policy)]
    units = audit_units(records, policy)
    by_id = {unit.unit_id: record for record, unit in units}
    if design == "random":
        drawn = draw_random(sorted(by_id), n, seed)
    elif design == "cluster":
        drawn = draw_cluster([(u.unit_id, split_unit_id(u.unit_id)[0]) for _, u in units], n, seed)
    else:
        drawn = draw_stratified([(u.unit_id, stratum_of(u.is_harmful, u.judge_handled)) for _, u in units], n, seed)
    return [(by_id[unit.unit_id], unit) for unit in drawn]
