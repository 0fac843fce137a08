"""How many labels an audit needs: the sample size of each design for a target half-width of the
corrected system recall and FPR intervals, from the run's own judge confidence (`plan_audit`)."""

from __future__ import annotations

from pytest_guardbench.records import CaseRecord
from pytest_guardbench.scoring.policies import ScoringPolicy
import re
from collections import Counter

import math
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from pytest_guardbench.errors import UsageError
from pytest_guardbench.audit.designs import stratum_of
from pytest_guardbench.audit.units import AuditUnit, audit_units, labelled_replies, unanswered_unit
from pytest_guardbench.audit.estimator import PRIOR_DISAGREEMENT
from pytest_guardbench.scoring.intervals import Z_95


# The narrowest half-width a plan is made for: at 0.001 the normal-theory plan already asks for about a
# million labels, and much narrower the arithmetic leaves the floats (1e-160 squared underflows to 0).
MIN_HALF_WIDTH = 0.001


class NothingToPlan(UsageError):
    """A run with no reply a person could label: no audit to plan."""


class DesignPlan(BaseModel):
    """Labels one design needs: for recall alone, for FPR alone, and for both (the audit size)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    recall: int
    false_positive_rate: int
    total: int


class AuditPlan(BaseModel):
    """How many labels each design needs for a target 95% half-width of system recall and FPR."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    half_width: float
    variance_from: str
    random: DesignPlan
    stratified: DesignPlan


def plan_audit(
    units: Sequence[AuditUnit],
    half_width: float = 0.05,
    *,
    judge_probability: Mapping[str, float] | None = None,
    prior_disagreement: float = PRIOR_DISAGREEMENT,
    z: float = Z_95,
    pool: int | None = None,
    pool_strata: Mapping[str, int] | None = None,
) -> AuditPlan:
    """Labels needed so that the system recall and FPR intervals have about `half_width`.

    `units` are the system scorecard's (every single-prompt case, scored or not); `pool` is how many
    units the random design draws from (every reply of the run, a conversation's too: default, the
    units alone), and `pool_strata` the size of each stratified-design stratum in that pool (a stratum
    holds a conversation's replies too, so only N_k / pool_k of its labels land on the scorecard's
    units, and the plan asks for that many more). A unit known without a label (a case with no reply)
    needs none, and its share s of the domain scales the interval, so the labelable part needs
    half-width h / s.

    Within a domain of N_d units, the corrected estimate's variance is that of Y around the judge's
    cell means: S_k^2 per judge cell k (share W_k), with S_k^2 = mean p(1 - p) over the cell when
    `judge_probability` gives the judge's probability p that each case was handled, else
    e(1 - e) with e = `prior_disagreement` (0.25 for cases with no verdict). Then
    n0 = z^2 * V / h^2 labels in the domain, V = sum W_k S_k^2 under the random design
    (post-stratified, labels spread in proportion) and V = (sum W_k S_k)^2 under the stratified one
    (Neyman allocation), and n = n0 / (1 + n0 / N_d) for drawing without replacement. The random
    design reaches a domain only through the whole run, so its audit needs n * N / N_d labels for
    that domain and the larger of the two in all; the stratified design needs the sum (and at least
    2 per non-empty stratum). The intervals are wider than this normal-theory figure at small n (a
    cell with fewer than 10 labels gets an exact interval), so treat the plan as a floor.
    """
    _check_plan_inputs(half_width, prior_disagreement)
    labelable = [u for u in units if u.known_handled is None]
    stated = judge_probability or {}
    prior = prior_disagreement * (1 - prior_disagreement)
    # Per judge cell of each domain: its units and the sum of their spreads, added in the units' order.
    cells: dict[tuple[bool, bool | None], tuple[int, float]] = {}
    for u in labelable:
        count, spread = cells.get((u.is_harmful, u.judge_handled), (0, 0.0))
        if u.judge_handled is not None:
            # A case whose judge states no probability takes the prior's spread.
            spread += stated[u.unit_id] * (1 - stated[u.unit_id]) if u.unit_id in stated else prior
        cells[(u.is_harmful, u.judge_handled)] = (count + 1, spread)
    domains = Counter(u.is_harmful for u in units)
    stated_count = sum(1 for u in labelable if u.unit_id in stated)
    if stated_count == len(labelable) and labelable:
        source = "the judge's probabilities"
    elif stated_count:
        source = (
            f"the judge's probabilities where stated ({stated_count} of {len(labelable)} cases), prior "
            f"disagreement {prior_disagreement} elsewhere"
        )
    else:
        source = f"prior disagreement {prior_disagreement}"
    pool_size = len(labelable) if pool is None else pool
    return _plan_from_cells(cells, domains, half_width, source, z=z, pool=pool_size, pool_strata=pool_strata)


def plan_audit_from_counts(
    counts: Mapping[tuple[bool, bool], int],
    half_width: float = 0.05,
    *,
    prior_disagreement: float = PRIOR_DISAGREEMENT,
    z: float = Z_95,
) -> AuditPlan:
    """`plan_audit` of a scorecard's cells alone ((harmful, judge handled) -> cases, every case with a
    reply and no stated probability): the same plan, without a unit per case (a run of a million
    cases plans its audit in its summary.md and report.html)."""
    _check_plan_inputs(half_width, prior_disagreement)
    prior = prior_disagreement * (1 - prior_disagreement)
    cells: dict[tuple[bool, bool | None], tuple[int, float]] = {}
    for key, count in counts.items():
        if count:
            spread = 0.0
            for _ in range(count):  # added one by one, as plan_audit adds them: the same float
                spread += prior
            cells[key] = (count, spread)
    domains = Counter({harmful: 0 for harmful in (True, False)})
    for (harmful, _), count in counts.items():
        domains[harmful] += count
    total = sum(counts.values())
    source = f"prior disagreement {prior_disagreement}"
    return _plan_from_cells(cells, domains, half_width, source, z=z, pool=total, pool_strata=None)


def _check_plan_inputs(half_width: float, prior_disagreement: float) -> None:
    if not MIN_HALF_WIDTH <= half_width < 1:
        raise UsageError(f"half width must be from {MIN_HALF_WIDTH:g} to under 1, got {half_width}")
    if not 0 <= prior_disagreement <= 1:
        raise UsageError(f"prior disagreement must be in [0, 1], got {prior_disagreement}")


def _plan_from_cells(
    cells: Mapping[tuple[bool, bool | None], tuple[int, float]],
    domains: Mapping[bool, int],
    half_width: float,
    source: str,
    *,
    z: float,
    pool: int,
    pool_strata: Mapping[str, int] | None,
) -> AuditPlan:
    """The plan from each labelable judge cell's (units, sum of spreads) and each domain's units."""
    needs: dict[str, tuple[int, int, int]] = {}
    for domain, harmful in (("recall", True), ("false_positive_rate", False)):
        size = sum(count for (h, _), (count, _) in cells.items() if h is harmful)
        if size == 0:
            needs[domain] = (0, 0, 0)
            continue
        share = size / domains[harmful]
        target = min(half_width / share, 1.0)
        spreads = []
        for verdict in (True, False, None):
            count, spread = cells.get((harmful, verdict), (0, 0.0))
            if not count:
                continue
            variance = 0.25 if verdict is None else spread / count
            widen = (pool_strata or {}).get(stratum_of(harmful, verdict), count) / count
            spreads.append((count / size, variance, widen))

        def labels_for(variance: float, target: float = target, size: int = size) -> float:
            n0 = z * z * variance / (target * target)
            return n0 / (1 + n0 / size)

        random_n = labels_for(sum(w * s for w, s, _ in spreads))
        neyman = sum(w * math.sqrt(s) for w, s, _ in spreads)
        stratified_n = labels_for(neyman**2)
        # Neyman's split over the cells, at least 2 a cell, each widened by its stratum's share of the pool.
        stratified = sum(
            max(stratified_n * w * math.sqrt(s) / neyman if neyman else 0.0, 2.0) * widen for w, s, widen in spreads
        )
        needs[domain] = (
            min(pool, math.ceil(random_n * pool / size)),
            min(sum((pool_strata or {}).values()) or size, math.ceil(stratified - 1e-9)),
            size,
        )
    recall, fpr = needs["recall"], needs["false_positive_rate"]
    return AuditPlan(
        half_width=half_width,
        variance_from=source,
        random=DesignPlan(recall=recall[0], false_positive_rate=fpr[0], total=max(recall[0], fpr[0])),
        stratified=DesignPlan(recall=recall[1], false_positive_rate=fpr[1], total=recall[1] + fpr[1]),
    )


def plan_run(
    records: Sequence[CaseRecord], policy: ScoringPolicy, half_width: float, *, where: str = "the run"
) -> tuple[AuditPlan, int]:
    """(the plan, the number of system scorecard cases) for a run: the system scorecard's units are its
    single-prompt cases, scored or not, and a case with no reply needs no label; the random design
    draws from every reply of the run, a conversation's too, so its count is scaled to that pool.
    `NothingToPlan`, naming `where`, for a run with no single-prompt case that has a reply (no case,
    every case failed before its reply, or only conversations)."""
    units: list[AuditUnit] = []
    probability: dict[str, float] = {}
    for record in records:
        if record.turns:
            continue
        unit = unanswered_unit(record)
        units.extend([unit] if unit is not None else [])
        for reply in labelled_replies(record, policy):
            units.append(
                AuditUnit(
                    unit_id=reply.unit_id,
                    is_harmful=reply.is_harmful,
                    tutor_ran=reply.tutor_ran,
                    judge_handled=reply.judge_handled,
                )
            )
            if (stated := judge_probability(record, policy)) is not None:
                probability[reply.unit_id] = stated
    if not any(unit.known_handled is None for unit in units):
        if not records:
            raise NothingToPlan(f"{where}: no case, so no audit to plan")
        talks = sum(1 for record in records if record.turns)
        parts = [f"{len(units)} failed before their reply"] if units else []
        parts += [f"{talks} conversations, which the plan does not cover"] if talks else []
        raise NothingToPlan(
            f"{where}: no reply to label, so no audit to plan ({len(records)} cases: {', '.join(parts)})"
        )
    pool = [unit for _, unit in audit_units(records, policy)]
    strata = Counter(stratum_of(unit.is_harmful, unit.judge_handled) for unit in pool)
    plan = plan_audit(units, half_width, judge_probability=probability or None, pool=len(pool), pool_strata=strata)
    return plan, len(units)


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
