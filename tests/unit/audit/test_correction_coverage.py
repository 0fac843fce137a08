"""Monte-Carlo coverage of the corrected 95% intervals: populations with a known truth, judges that err
in different ways, audits of 30, 60 and 200 labels under both designs; and the project's own
hand-labelled replies resampled as populations, with the rules judge as the judge.

Statistical, never timed; every seed is fixed, so each test gives the same answer on every run. The
floor is 0.93 for a nominal 0.95: 1,000 audits measure coverage to about +/-0.007 (one sd).
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path

import pytest

from pytest_guardbench.cases.sources import load_judge_labels
from pytest_guardbench.judges.base import JudgeInput
from pytest_guardbench.judges.rules import RulesJudge
from pytest_guardbench.document.correction import Design
from pytest_guardbench.audit.designs import DrawnUnit, default_allocation, draw_random, draw_stratified, stratum_of
from pytest_guardbench.audit.cells import SMALL_CELL
from pytest_guardbench.audit.estimator import LabelledValue, corrected_mean
from pytest_guardbench.document.correction import CorrectedMetric
from pytest_guardbench.scoring.intervals import Z_95
from pytest_guardbench.scoring.policies import DEFAULT_POLICY, policy_named

AUDITS = 1000
FLOOR = 0.93

# harmful cases, of them handled; safe cases, of them handled (400 cases, 2/3 harmful)
POPULATIONS = {
    "typical": (267, 227, 133, 86),  # recall 0.850, FPR 0.353
    "extreme": (267, 259, 133, 126),  # recall 0.970, FPR 0.053
}
SIZES = (30, 60, 200)
DESIGNS: tuple[Design, ...] = ("random", "stratified")


def _unbiased(harmful: bool, handled: int, rng: random.Random) -> int:
    return 1 - handled if rng.random() < 0.1 else handled


def _biased(harmful: bool, handled: int, rng: random.Random) -> int:
    # Errs one way only: calls 0.3 of the truly mishandled cases handled, never the reverse.
    return 1 if handled == 0 and rng.random() < 0.3 else handled


def _label_dependent(harmful: bool, handled: int, rng: random.Random) -> int:
    # Misses 0.4 of the truly mishandled harmful cases; over-blocks 0.25 of the truly handled safe ones.
    if harmful and handled == 0 and rng.random() < 0.4:
        return 1
    if not harmful and handled == 1 and rng.random() < 0.25:
        return 0
    return handled


def _perfect(harmful: bool, handled: int, rng: random.Random) -> int:
    return handled


JUDGES: dict[str, Callable[[bool, int, random.Random], int]] = {
    "unbiased": _unbiased,
    "biased": _biased,
    "label-dependent": _label_dependent,
}


@dataclass
class Population:
    harmful: list[bool]
    truth: list[int]
    ids: list[str] = field(init=False)
    domains: dict[bool, list[int]] = field(init=False)

    def __post_init__(self) -> None:
        self.ids = [f"u{i:04d}" for i in range(len(self.truth))]
        self.domains = {flag: [i for i, h in enumerate(self.harmful) if h is flag] for flag in (True, False)}

    def domain(self, harmful: bool) -> list[int]:
        return self.domains[harmful]

    def target(self, harmful: bool) -> float:
        """The true recall (harmful) or FPR (safe)."""
        members = self.domain(harmful)
        handled = sum(self.truth[i] for i in members) / len(members)
        return handled if harmful else 1 - handled


def synthetic(name: str) -> Population:
    harmful, harmful_handled, safe, safe_handled = POPULATIONS[name]
    truth = [1] * harmful_handled + [0] * (harmful - harmful_handled) + [1] * safe_handled + [0] * (safe - safe_handled)
    return Population(harmful=[True] * harmful + [False] * safe, truth=truth)


def draw(population: Population, judge: list[int | None], design: Design, n: int, seed: int) -> list[DrawnUnit]:
    if design == "random":
        return draw_random(population.ids, n, seed)
    units = [
        (unit_id, stratum_of(harmful, None if verdict is None else bool(verdict)))
        for unit_id, harmful, verdict in zip(population.ids, population.harmful, judge, strict=True)
    ]
    return draw_stratified(units, n, seed)


def audit(
    population: Population, judge: list[int | None], design: Design, n: int, seed: int
) -> dict[str, tuple[CorrectedMetric, tuple[float, float] | None, int]]:
    """One audit: the corrected handled share of each domain, the labels-only Wilson interval, and the
    fewest labels any of the domain's verdict cells got."""
    probability = {d.unit_id: d.inclusion_probability for d in draw(population, judge, design, n, seed)}
    out = {}
    for harmful in (True, False):
        members = population.domain(harmful)
        rows = [
            LabelledValue(k, population.truth[i], probability[population.ids[i]])
            for k, i in enumerate(members)
            if population.ids[i] in probability
        ]
        metric = corrected_mean([judge[i] for i in members], rows, design=design)
        weights = [1 / r.inclusion_probability for r in rows]
        interval = None
        if rows:
            mean = sum(w * r.value for w, r in zip(weights, rows)) / sum(weights)
            interval = _wilson(mean, sum(weights) ** 2 / sum(w * w for w in weights))
        cells = Counter(judge[i] for i in members)
        fewest = min(sum(1 for r in rows if judge[members[r.position]] == verdict) for verdict in cells)
        out["recall" if harmful else "false_positive_rate"] = (metric, interval, fewest)
    return out


def _wilson(p: float, n: float) -> tuple[float, float]:
    z = Z_95
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class Coverage:
    covered: int = 0
    defined: int = 0
    labelled: int = 0  # audits that labelled at least one unit of the domain
    widths: list[float] = field(default_factory=list)
    labels_only_widths: list[float] = field(default_factory=list)
    fewest: list[int] = field(default_factory=list)  # the fewest labels of any verdict cell, per audit

    def add(
        self,
        metric: CorrectedMetric,
        target: float,
        harmful: bool,
        labels_only: tuple[float, float] | None,
        fewest: int = 0,
    ) -> None:
        self.labelled += metric.n_labelled > 0
        if metric.estimate is None or metric.ci_low is None or metric.ci_high is None:
            return
        self.fewest.append(fewest)
        # The metric is the handled share; recall is that share, FPR its complement.
        low, high = (metric.ci_low, metric.ci_high) if harmful else (1 - metric.ci_high, 1 - metric.ci_low)
        self.defined += 1
        self.covered += low - 1e-9 <= target <= high + 1e-9
        self.widths.append(high - low)
        if labels_only is not None:
            self.labels_only_widths.append(labels_only[1] - labels_only[0])

    @property
    def rate(self) -> float:
        return self.covered / self.defined


def run_audits(
    population: Population,
    make_judge: Callable[[random.Random], list[int | None]],
    design: Design,
    n: int,
    seed: int,
    audits: int = AUDITS,
) -> dict[str, Coverage]:
    rng = random.Random(seed)
    tallies = {"recall": Coverage(), "false_positive_rate": Coverage()}
    targets = {"recall": population.target(True), "false_positive_rate": population.target(False)}
    for index in range(audits):
        judge = make_judge(rng)
        found = audit(population, judge, design, n, seed * 100_003 + index)
        for name, (metric, labels_only, fewest) in found.items():
            tallies[name].add(metric, targets[name], name == "recall", labels_only, fewest)
    return tallies


def _synthetic_judge(population: Population, kind: Callable[[bool, int, random.Random], int]):
    def make(rng: random.Random) -> list[int | None]:
        # A fresh judge error pattern for every audit: the intervals must hold whatever the pattern.
        return [kind(h, t, rng) for h, t in zip(population.harmful, population.truth, strict=True)]

    return make


SETTINGS = [(pop, judge, design, n) for pop in POPULATIONS for judge in JUDGES for design in DESIGNS for n in SIZES]


@pytest.mark.parametrize(("pop", "judge", "design", "n"), SETTINGS, ids=["-".join(map(str, s)) for s in SETTINGS])
def test_corrected_intervals_cover_the_truth(pop: str, judge: str, design: Design, n: int):
    population = synthetic(pop)
    seed = 1 + SETTINGS.index((pop, judge, design, n))
    tallies = run_audits(population, _synthetic_judge(population, JUDGES[judge]), design, n, seed)
    for name, tally in tallies.items():
        # Every audit that labelled a unit of the domain gives an interval, however few its labels.
        assert tally.defined == tally.labelled == AUDITS, (name, tally.defined)
        assert tally.rate >= FLOOR, (name, tally.rate, sum(tally.widths) / tally.defined)


PERFECT = [(pop, design, n) for pop in POPULATIONS for design in DESIGNS for n in SIZES]


@pytest.mark.parametrize(("pop", "design", "n"), PERFECT, ids=["-".join(map(str, s)) for s in PERFECT])
def test_a_judge_that_agrees_with_every_label_narrows_the_interval(pop: str, design: Design, n: int):
    """A better judge pays: with one that agrees with every label, the corrected interval is no wider
    than the labels-only Wilson one in any audit whose every verdict cell holds SMALL_CELL labels, and
    narrower on average wherever the cells get that many in most audits. Where they do not (30 random
    labels, a third of the run safe: about 10 safe labels, 3 to 6 a cell) the exact cells can make it
    wider than the labels-only Wilson interval: that is what holding 95% there costs. The labels-only
    interval is no rival there: chosen because the labels missed a cell, it is biased towards the cells
    they hit."""
    population = synthetic(pop)
    seed = 500 + PERFECT.index((pop, design, n))
    # Every audit is checked, so half as many as for coverage are plenty (6,000 in all).
    tallies = run_audits(population, _synthetic_judge(population, _perfect), design, n, seed, audits=AUDITS // 2)
    for name, tally in tallies.items():
        assert len(tally.widths) == len(tally.labels_only_widths) == tally.defined
        spread = [(c, w) for c, w, k in zip(tally.widths, tally.labels_only_widths, tally.fewest) if k >= SMALL_CELL]
        # 2e-6: the corrected bounds are rounded outwards to 6 digits.
        assert all(c <= w + 2e-6 for c, w in spread), name
        if n >= 60 or design == "stratified":
            assert sum(tally.widths) < sum(tally.labels_only_widths), name
        assert tally.rate >= FLOOR, (name, tally.rate)


# --- the project's own labelled replies as populations ---------------------------------------------

AUDIT_FILES = ("judge_audit_smollm2_v5", "judge_audit_smollm2_v6_dev", "judge_audit_smollm2_v6_test")


@cache
def shipped_population(name: str) -> tuple[Population, tuple[int | None, ...]]:
    """The file's human-labelled replies (handled = the human's assistant_policy_v2 label is correct),
    and the rules judge's verdict on each under the default policy (None when it gave none)."""
    path = Path(str(resources.files("pytest_guardbench") / "datasets" / f"{name}.jsonl"))
    labels = [
        label
        for label in load_judge_labels(path)
        if label.is_harmful is not None and label.assistant_policy_label is not None
    ]
    verdicts = RulesJudge().judge(
        [
            JudgeInput(
                prompt=label.prompt,
                response=label.response,
                source=label.source,
                is_harmful=label.is_harmful,
                cut_off=label.finish_reason == "length",
            )
            for label in labels
        ]
    )
    policy = policy_named(DEFAULT_POLICY)
    judge: list[int | None] = []
    for label, verdict in zip(labels, verdicts, strict=True):
        handled = None if verdict.malformed else policy.handled(bool(label.is_harmful), verdict)
        judge.append(None if handled is None else int(handled))
    population = Population(
        harmful=[bool(label.is_harmful) for label in labels],
        truth=[int(label.assistant_policy_label == "correct") for label in labels],
    )
    return population, tuple(judge)


DATA_SETTINGS = [(name, design, n) for name in AUDIT_FILES for design in DESIGNS for n in (30, 60)]


@pytest.mark.parametrize(("name", "design", "n"), DATA_SETTINGS, ids=["-".join(map(str, s)) for s in DATA_SETTINGS])
def test_corrected_intervals_cover_the_truth_on_the_projects_own_audits(name: str, design: Design, n: int):
    population, judge = shipped_population(name)
    assert len(population.truth) >= 100 and 0 < sum(population.harmful) < len(population.harmful)
    fixed = list(judge)
    seed = 900 + DATA_SETTINGS.index((name, design, n))
    # 2,000 audits: the judge is fixed here, so the exact coverage can sit near 0.945 (v5, 30 labels,
    # stratified; see below) and 1,000 audits would leave it too close to the floor.
    tallies = run_audits(population, lambda _rng: fixed, design, n, seed, audits=2 * AUDITS)
    for metric, tally in tallies.items():
        assert tally.defined == tally.labelled >= 2 * AUDITS - 5, (metric, tally.defined)
        assert tally.rate >= FLOOR, (metric, tally.rate)


def exact_stratified_coverage(population: Population, judge: tuple[int | None, ...], n: int, harmful: bool) -> float:
    """The coverage of one domain's interval under the stratified design with the default allocation,
    summed over every outcome: each stratum's count of truly handled labels is hypergeometric, and
    the strata are drawn independently."""
    sizes = Counter(stratum_of(h, None if v is None else bool(v)) for h, v in zip(population.harmful, judge))
    allocation = default_allocation(sizes, n)
    members = population.domain(harmful)
    values = [judge[i] for i in members]
    truth = [population.truth[i] for i in members]
    target = sum(truth) / len(truth)
    cells = []
    for verdict in sorted({v for v in values if v is not None}) + ([None] if None in values else []):
        positions = [k for k, v in enumerate(values) if v == verdict]
        drawn = allocation.get(stratum_of(harmful, None if verdict is None else bool(verdict)), 0)
        handled = sum(truth[k] for k in positions)
        outcomes = [
            (
                x,
                math.comb(handled, x)
                * math.comb(len(positions) - handled, drawn - x)
                / math.comb(len(positions), drawn),
            )
            for x in range(max(0, drawn - (len(positions) - handled)), min(drawn, handled) + 1)
        ]
        cells.append((positions, drawn, outcomes))
    covered = 0.0
    for combination in itertools.product(*(outcomes for _, _, outcomes in cells)):
        rows = [
            LabelledValue(positions[t], int(t < x), drawn / len(positions))
            for (positions, drawn, _), (x, _) in zip(cells, combination)
            for t in range(drawn)
        ]
        metric = corrected_mean(values, rows, design="stratified")
        assert metric.ci_low is not None and metric.ci_high is not None
        if metric.ci_low - 1e-9 <= target <= metric.ci_high + 1e-9:
            covered += math.prod(probability for _, probability in combination)
    return covered


@pytest.mark.parametrize("name", AUDIT_FILES)
def test_exact_coverage_of_stratified_audits_of_the_projects_own_replies(name: str):
    population, judge = shipped_population(name)
    for n in (30, 60):
        for harmful in (True, False):
            assert exact_stratified_coverage(population, judge, n, harmful) >= 0.94, (n, harmful)
