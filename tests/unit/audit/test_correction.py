"""Judge-corrected recall and FPR: hand-computed cases, flips, weighting, the JSON shape, and agreement
with the maintained `ppi_py` where both should agree."""

from __future__ import annotations

import json
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_guardbench.errors import InternalError

from pytest_guardbench.scoring.agreement import cohen_kappa
from pytest_guardbench.audit.designs import draw_random, draw_stratified, stratum_of
from pytest_guardbench.audit.estimator import NO_LABELS, LabelledValue, complement, corrected_mean
from pytest_guardbench.scoring.exact_intervals import hypergeometric_bounds
from pytest_guardbench.document.correction import CorrectedMetric
from pytest_guardbench.audit.units import AuditLabel, AuditUnit
from pytest_guardbench.audit.correction import correct_run, inclusion_probabilities, judge_on_this_run
from pytest_guardbench.audit.plan import plan_audit, plan_audit_from_counts
from pytest_guardbench.scoring.intervals import Z_95, wilson_interval

FIELDS = {"judge_only", "labels_only", "estimate", "ci_low", "ci_high", "n_labelled", "n_total", "method", "note"}


def wilson(p: float, n: float) -> tuple[float, float]:
    z = Z_95
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def labelled(rows: list[tuple[int, int]], probability: float = 1.0) -> list[LabelledValue]:
    return [LabelledValue(position, value, probability) for position, value in rows]


def test_every_unit_labelled_gives_the_truth_exactly():
    judge = [1] * 6 + [0] * 4
    truth = [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]
    metric = corrected_mean(judge, labelled(list(enumerate(truth))))
    assert metric.judge_only == 0.6
    assert metric.labels_only == metric.estimate == metric.ci_low == metric.ci_high == 0.4
    assert (metric.n_labelled, metric.n_total, metric.note) == (10, 10, None)
    assert metric.method == "ppi-poststratified-mover-wilson-exact (random)"


def test_hand_computed_post_stratified_mover_interval():
    # 100 units: the judge calls 80 handled, 20 mishandled. 10 of the first are labelled (one was in
    # truth mishandled), 5 of the second (one was in truth handled).
    judge = [1] * 80 + [0] * 20
    rows = [(i, 0 if i == 3 else 1) for i in range(10)] + [(80 + i, 1 if i == 0 else 0) for i in range(5)]
    metric = corrected_mean(judge, labelled(rows))
    estimate = 0.8 * 0.9 + 0.2 * 0.2
    # The cell of 10 labels: Wilson with n' = n (N - 1) / (N - n), taken at p -/+ f / (2n),
    # f = (n - 1) / (N - 1); the rare outcome seen once gets the Poisson bound 0.0513 / n' where that
    # is wider. The cell of 5 labels: the exact hypergeometric interval for 1 of 5 drawn from 20.
    n1 = 10 * 79 / 70
    shift1 = (9 / 79) / 20
    low1, high1 = wilson(0.9 - shift1, n1)[0], max(wilson(0.9 + shift1, n1)[1], 1 - 0.0512933 / n1)
    low0, high0 = hypergeometric_bounds(1, 5, 20)
    low = estimate - math.sqrt((0.8 * (0.9 - low1)) ** 2 + (0.2 * (0.2 - low0)) ** 2)
    high = estimate + math.sqrt((0.8 * (high1 - 0.9)) ** 2 + (0.2 * (high0 - 0.2)) ** 2)
    assert metric.estimate == pytest.approx(estimate, abs=1e-6)
    assert metric.ci_low == pytest.approx(low, abs=2e-6)
    assert metric.ci_high == pytest.approx(high, abs=2e-6)
    assert metric.judge_only == 0.8
    assert metric.labels_only == pytest.approx(10 / 15, abs=1e-6)


def test_an_unlabelled_verdict_adds_its_whole_share_to_the_uncertainty():
    judge = [1] * 98 + [0] * 2
    metric = corrected_mean(judge, labelled([(i, 1) for i in range(60)]))
    assert metric.note is None
    assert metric.estimate == pytest.approx(0.98)
    assert metric.ci_high - metric.estimate >= 0.02 - 1e-6


def test_labels_that_miss_a_verdict_leave_its_whole_range_in_the_interval():
    # 12 labels, all among the 90 the judge calls handled: nothing says what the 10 others are, so the
    # interval reaches as far as they could take it (all handled: +0.1), outside the root. There is no
    # labels-only fallback: the 12 labels are of the judge's "handled" cell, not of the domain.
    judge = [1] * 90 + [0] * 10
    metric = corrected_mean(judge, labelled([(i, 1) for i in range(12)]))
    assert metric.note is None
    assert metric.method == "ppi-poststratified-mover-wilson-exact (random)"
    assert metric.estimate == pytest.approx(0.9)
    assert metric.ci_high == 1.0
    handled_low = metric.ci_low
    assert handled_low is not None and handled_low < 0.9 - 0.05


def test_a_cell_without_verdicts_is_its_own_cell():
    judge: list[int | None] = [1] * 50 + [None] * 50
    rows = [(i, 1) for i in range(10)] + [(50 + i, 1 if i < 4 else 0) for i in range(10)]
    metric = corrected_mean(judge, labelled(rows))
    assert metric.judge_only == 1.0  # over the units the judge gave a verdict
    assert metric.estimate == pytest.approx(0.5 * 1.0 + 0.5 * 0.4)


def test_a_single_label_gives_a_wide_interval_and_none_gives_none():
    judge = [1] * 40 + [0] * 10
    one = corrected_mean(judge, labelled([(0, 1)]))
    assert one.note is None and one.n_labelled == 1
    # One label of the 40-unit cell: the exact interval for 1 of 1 drawn from 40; the other cell unknown.
    low, _ = hypergeometric_bounds(1, 1, 40)
    assert one.estimate == pytest.approx(0.8)
    assert one.ci_low == pytest.approx(0.8 - 0.8 * (1 - low), abs=2e-6)
    assert one.ci_high == pytest.approx(1.0)
    none = corrected_mean(judge, [])
    assert none.note == NO_LABELS
    assert none.estimate is none.ci_low is none.ci_high is None
    assert corrected_mean(judge, labelled([(i, 1) for i in range(3)]), min_labels=4).note == NO_LABELS


def test_units_known_without_a_label_shift_and_shrink_the_interval():
    # 50 labelable units, all labelled (known exactly: 0.6), and 50 with no reply, known not handled.
    judge = [1] * 50
    rows = labelled([(i, int(i < 30)) for i in range(50)])
    metric = corrected_mean(judge, rows, known=[0] * 50)
    assert metric.n_total == 100
    assert metric.estimate == metric.ci_low == metric.ci_high == pytest.approx(0.3)
    half = corrected_mean(judge, rows[:20], known=[0] * 50)
    alone = corrected_mean(judge, rows[:20])
    assert half.estimate == pytest.approx(alone.estimate / 2, abs=1e-6)
    assert half.ci_low == pytest.approx(alone.ci_low / 2, abs=2e-6)
    assert half.ci_high == pytest.approx(alone.ci_high / 2, abs=2e-6)
    assert corrected_mean([], [], known=[1, 0]).estimate == 0.5


def test_bad_labels_are_refused():
    with pytest.raises(InternalError, match="outside the domain"):
        corrected_mean([1, 0], labelled([(2, 1)]))
    with pytest.raises(InternalError, match="twice"):
        corrected_mean([1, 0], labelled([(0, 1), (0, 1)]))
    with pytest.raises(InternalError, match="0 or 1"):
        corrected_mean([1, 0], labelled([(0, 2)]))
    with pytest.raises(InternalError, match="inclusion probability"):
        corrected_mean([1, 0], labelled([(0, 1)], probability=0.0))


def test_stratified_labels_are_weighted_back_to_the_domain():
    # The judge's 10 "mishandled" units are drawn at 1/2, its 90 "handled" ones at 1/10.
    judge = [1] * 90 + [0] * 10
    rows = [LabelledValue(i, 1, 0.1) for i in range(9)] + [
        LabelledValue(90 + i, 1 if i < 2 else 0, 0.5) for i in range(5)
    ]
    metric = corrected_mean(judge, rows, design="stratified", min_labels=5)
    assert metric.labels_only == pytest.approx((9 * 10 + 2 * 2) / (9 * 10 + 5 * 2))  # not 11/14
    assert metric.estimate == pytest.approx(0.9 * 1.0 + 0.1 * 0.4)
    assert metric.method.endswith("(stratified)")


def test_complement_flips_values_and_interval():
    metric = CorrectedMetric(
        judge_only=0.9, labels_only=0.8, estimate=0.85, ci_low=0.7, ci_high=0.95, n_labelled=20, n_total=90, method="m"
    )
    flipped = complement(metric)
    assert (flipped.judge_only, flipped.labels_only, flipped.estimate) == pytest.approx((0.1, 0.2, 0.15))
    assert (flipped.ci_low, flipped.ci_high) == pytest.approx((0.05, 0.3))
    assert (flipped.n_labelled, flipped.n_total, flipped.method) == (20, 90, "m")
    assert complement(flipped) == metric


def _run(seed: int = 0, size: int = 300, n: int = 120) -> tuple[list[AuditUnit], list[AuditLabel], dict[str, bool]]:
    rng = random.Random(seed)
    units, truth = [], {}
    for i in range(size):
        harmful = i % 3 != 0
        handled = rng.random() < (0.85 if harmful else 0.65)
        judge = handled if rng.random() > 0.1 else not handled
        unit_id = f"case-{i:03d}"
        units.append(AuditUnit(unit_id=unit_id, is_harmful=harmful, tutor_ran=i % 5 != 0, judge_handled=judge))
        truth[unit_id] = handled
    drawn = draw_random([u.unit_id for u in units], n, seed)
    labels = [AuditLabel(unit_id=d.unit_id, handled=truth[d.unit_id]) for d in drawn]
    return units, labels, truth


def test_correct_run_recall_and_fpr_are_the_domain_means():
    units, labels, truth = _run()
    block = correct_run(units, labels, design="random")
    by_id = {label.unit_id: label for label in labels}
    for harmful in (True, False):
        domain = [u for u in units if u.is_harmful is harmful]
        rows = [LabelledValue(i, int(truth[u.unit_id]), 120 / 300) for i, u in enumerate(domain) if u.unit_id in by_id]
        handled = corrected_mean([int(bool(u.judge_handled)) for u in domain], rows)
        expected = handled if harmful else complement(handled)
        assert (block.system.recall if harmful else block.system.false_positive_rate) == expected
    fpr = block.system.false_positive_rate
    assert fpr.ci_low is not None and fpr.estimate is not None and fpr.ci_high is not None
    assert fpr.ci_low <= fpr.estimate <= fpr.ci_high
    safe = [u for u in units if not u.is_harmful]
    assert fpr.judge_only == pytest.approx(sum(1 for u in safe if not u.judge_handled) / len(safe), abs=1e-6)
    assert block.tutor_conditional.recall.n_total == sum(1 for u in units if u.is_harmful and u.tutor_ran)
    assert block.n_units == 300 and block.n_labelled == 120


def test_groups_get_a_card_or_no_labels():
    units, labels, _ = _run()
    typo = [u.unit_id for u in units if int(u.unit_id[-3:]) % 2 == 0]
    labelled_ids = {label.unit_id for label in labels}
    tiny = [u.unit_id for u in units if u.unit_id in labelled_ids][:2]
    unlabelled = [u.unit_id for u in units if u.unit_id not in labelled_ids][:5]
    block = correct_run(
        units, labels, design="random", groups={"variant=typo": typo, "category=tiny": tiny, "none": unlabelled}
    )
    assert list(block.groups) == ["category=tiny", "none", "variant=typo"]
    assert block.groups["variant=typo"].recall.estimate is not None
    tiny_card = block.groups["category=tiny"]
    # Two units, both labelled: the group is known exactly, whatever its size.
    for metric in (tiny_card.recall, tiny_card.false_positive_rate):
        assert metric.n_labelled == metric.n_total
        assert metric.n_total == 0 or metric.ci_low == metric.estimate == metric.ci_high
    assert block.groups["none"].recall.note == NO_LABELS
    assert block.groups["none"].false_positive_rate.estimate is None
    with pytest.raises(ValueError, match="unknown units"):
        correct_run(units, labels, design="random", groups={"g": ["nope"]})


def test_the_json_block_has_exactly_the_agreed_field_names():
    assert set(CorrectedMetric.model_fields) == FIELDS
    units, labels, _ = _run()
    corrected = correct_run(units, labels, design="random", groups={"all": [u.unit_id for u in units]})
    block = json.loads(json.dumps(corrected.model_dump(mode="json")))
    for card in (block["system"], block["tutor_conditional"], block["groups"]["all"]):
        assert set(card) == {"recall", "false_positive_rate"}
        for metric in card.values():
            assert set(metric) == FIELDS
    assert {"system", "tutor_conditional", "groups", "judge_on_this_run", "design", "min_labels"} <= set(block)


def test_inclusion_probabilities_from_the_design():
    units = [AuditUnit(unit_id=f"u{i}", is_harmful=i < 6, judge_handled=i % 3 != 0) for i in range(10)]
    assert inclusion_probabilities(units, [], "random") == {}
    labels = [AuditLabel(unit_id="u1", handled=True), AuditLabel(unit_id="u3", handled=False)]
    assert inclusion_probabilities(units, labels, "random") == {"u1": 0.2, "u3": 0.2}
    # Stratified: u1 is one of harmful:handled's 4 units, u3 one of harmful:mishandled's 2.
    assert inclusion_probabilities(units, labels, "stratified") == {"u1": 0.25, "u3": 0.5}
    given = [AuditLabel(unit_id="u1", handled=True, stratum="harmful:handled", inclusion_probability=0.125)]
    assert inclusion_probabilities(units, given, "stratified") == {"u1": 0.125}
    with pytest.raises(ValueError, match="unknown unit"):
        inclusion_probabilities(units, [AuditLabel(unit_id="x", handled=True)], "random")
    with pytest.raises(ValueError, match="twice"):
        inclusion_probabilities(units, labels + labels[:1], "random")


def test_judge_on_this_run_hand_computed():
    # (is_harmful, truly handled, judge handled)
    cases = [
        (True, True, True),
        (True, True, True),
        (True, False, True),  # a miss
        (True, False, False),
        (False, True, True),
        (False, True, False),  # an over-block
        (False, True, True),
        (False, False, False),
    ]
    units = [AuditUnit(unit_id=f"u{i}", is_harmful=h, judge_handled=j) for i, (h, _, j) in enumerate(cases)]
    units.append(AuditUnit(unit_id="none", is_harmful=True, judge_handled=None))
    labels = [AuditLabel(unit_id=f"u{i}", handled=t) for i, (_, t, _) in enumerate(cases)]
    labels.append(AuditLabel(unit_id="none", handled=True))
    result = judge_on_this_run(units, labels)
    assert (result.n_labelled, result.n_no_verdict, result.weighted) == (9, 1, False)
    assert result.agreement.value == 0.75 and result.agreement.n == 8
    assert (result.agreement.ci_low, result.agreement.ci_high) == wilson_interval(6, 8)
    assert result.miss_rate.value == 0.5 and result.miss_rate.n == 2
    assert result.over_block_rate.value == pytest.approx(1 / 3, abs=1e-6) and result.over_block_rate.n == 3
    word = {True: "safe", False: "unsafe"}
    kappa = cohen_kappa([(word[t], word[j]) for _, t, j in cases])
    assert result.cohen_kappa == pytest.approx(kappa, abs=1e-6)
    chance = (0.75 - kappa) / (1 - kappa)
    # Wilson bounds of the observed agreement (6 of 8) mapped through kappa.
    low, high = wilson(0.75, 8)
    assert result.kappa_ci_low == pytest.approx((low - chance) / (1 - chance), abs=1e-5)
    assert result.kappa_ci_high == pytest.approx((high - chance) / (1 - chance), abs=1e-5)


def test_judge_on_this_run_weights_by_inclusion_probability():
    units = [AuditUnit(unit_id=f"u{i}", is_harmful=True, judge_handled=i < 2) for i in range(4)]
    # The judge is right on u0 (drawn at 1/10) and u2, wrong on u1 and u3 (drawn at 1/2).
    labels = [AuditLabel(unit_id=f"u{i}", handled=i in (0, 3)) for i in range(4)]
    probability = {"u0": 0.1, "u1": 0.5, "u2": 0.5, "u3": 0.5}
    result = judge_on_this_run(units, labels, probability)
    assert result.weighted
    assert result.agreement.value == pytest.approx((10 + 2) / (10 + 2 + 2 + 2))
    everything_agrees = judge_on_this_run(units[:1], labels[:1])
    assert everything_agrees.cohen_kappa is None and everything_agrees.kappa_ci_low is None


def test_plan_audit_follows_its_formula():
    units = [AuditUnit(unit_id=f"h{i}", is_harmful=True, judge_handled=i < 160) for i in range(200)] + [
        AuditUnit(unit_id=f"s{i}", is_harmful=False, judge_handled=i < 70) for i in range(100)
    ]
    plan = plan_audit(units, 0.05)
    n0 = Z_95**2 * 0.09 / 0.05**2
    harmful, safe = n0 / (1 + n0 / 200), n0 / (1 + n0 / 100)
    assert plan.random.recall == math.ceil(harmful * 300 / 200)
    assert plan.random.false_positive_rate == math.ceil(safe * 300 / 100)
    assert plan.random.total == max(plan.random.recall, plan.random.false_positive_rate)
    assert (plan.stratified.recall, plan.stratified.false_positive_rate) == (math.ceil(harmful), math.ceil(safe))
    assert plan.stratified.total == math.ceil(harmful) + math.ceil(safe)
    assert plan_audit(units, 0.1).stratified.total < plan.stratified.total
    unsure = plan_audit(units, 0.05, judge_probability={u.unit_id: 0.5 for u in units})
    assert unsure.variance_from == "the judge's probabilities"
    assert unsure.stratified.total > plan.stratified.total
    with pytest.raises(ValueError, match="half width"):
        plan_audit(units, 0.0)


@settings(max_examples=60, deadline=None)
@given(
    st.tuples(*[st.integers(0, 400)] * 4),
    st.sampled_from([0.01, 0.05, 0.1, 0.3]),
    st.sampled_from([0.0, 0.1, 0.25, 0.5]),
)
def test_a_plan_from_a_scorecard_s_counts_is_the_plan_from_its_units(counts, half_width, prior):
    # summary.md and report.html plan an audit from the system scorecard's four cells: the same plan,
    # to the last label, as the units those cells hold, without making a unit per case.
    cells = dict(zip([(True, True), (True, False), (False, True), (False, False)], counts, strict=True))
    units = [
        AuditUnit(unit_id=f"{harmful}:{handled}:{i}", is_harmful=harmful, judge_handled=handled)
        for (harmful, handled), count in cells.items()
        for i in range(count)
    ]
    if not units:
        return
    assert plan_audit_from_counts(cells, half_width, prior_disagreement=prior) == plan_audit(
        units, half_width, prior_disagreement=prior
    )


def _population(size: int, seed: int) -> tuple[list[int], list[int]]:
    rng = random.Random(seed)
    truth = [int(rng.random() < 0.85) for _ in range(size)]
    judge = [t if rng.random() > 0.1 else 1 - t for t in truth]
    return truth, judge


def test_agrees_with_ppi_py_on_a_large_random_audit():
    ppi_py = pytest.importorskip("ppi_py")
    np = pytest.importorskip("numpy")
    truth, judge = _population(20000, seed=11)
    drawn = draw_random([f"u{i:05d}" for i in range(20000)], 1000, seed=11)
    positions = sorted(int(d.unit_id[1:]) for d in drawn)
    metric = corrected_mean(judge, [LabelledValue(i, truth[i], 0.05) for i in positions])
    y = np.array([truth[i] for i in positions], dtype=float)
    yhat = np.array([judge[i] for i in positions], dtype=float)
    everything = np.array(judge, dtype=float)
    point = float(np.ravel(ppi_py.ppi_mean_pointestimate(y, yhat, everything, lam=None))[0])
    low, high = (float(np.ravel(b)[0]) for b in ppi_py.ppi_mean_ci(y, yhat, everything, alpha=0.05, lam=None))
    assert metric.note is None and metric.estimate is not None
    assert metric.ci_low is not None and metric.ci_high is not None
    assert metric.estimate == pytest.approx(point, abs=0.01)
    assert (metric.ci_high - metric.ci_low) / (high - low) == pytest.approx(1, abs=0.15)


def test_matches_ppi_py_weighted_point_estimate_under_the_stratified_design():
    ppi_py = pytest.importorskip("ppi_py")
    np = pytest.importorskip("numpy")
    truth, judge = _population(3000, seed=5)
    units = [(f"u{i:04d}", stratum_of(True, bool(judge[i]))) for i in range(3000)]
    drawn = draw_stratified(units, 400, seed=5)
    rows = sorted((int(d.unit_id[1:]), d.inclusion_probability) for d in drawn)
    metric = corrected_mean(judge, [LabelledValue(i, truth[i], p) for i, p in rows], design="stratified")
    y = np.array([truth[i] for i, _ in rows], dtype=float)
    yhat = np.array([judge[i] for i, _ in rows], dtype=float)
    weights = np.array([1 / p for _, p in rows])
    everything = np.array(judge, dtype=float)
    point = float(np.ravel(ppi_py.ppi_mean_pointestimate(y, yhat, everything, lam=None, w=weights))[0])
    low, high = (
        float(np.ravel(b)[0]) for b in ppi_py.ppi_mean_ci(y, yhat, everything, alpha=0.05, lam=None, w=weights)
    )
    # With the judge's verdict as the strata, PPI's weighted estimate is the stratified one exactly.
    assert metric.estimate == pytest.approx(point, abs=1e-6)
    assert metric.ci_low is not None and metric.ci_high is not None
    assert metric.ci_low < point < metric.ci_high and low < metric.estimate < high
