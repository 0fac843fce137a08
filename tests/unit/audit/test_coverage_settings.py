"""Monte-Carlo coverage of the corrected 95% intervals in every named setting: {random, stratified} on
single-prompt runs shaped like the main job and like a typical run, and {cluster} on a run of
conversations; x {30, 60, 120} labels; x {a rules-like judge, an offline-like judge, a judge that
scores none of the mishandled cases, a judge whose "mishandled" verdict is always wrong}
(`coverage_sim` builds them). Every metric a setting corrects must hold the truth in at least 0.93
of its audits: recall and FPR; under the cluster design also the conversation scorecard,
`recall_by_turn` at each depth, and the replies corrected as replies with their labels clustered.

How many audits, and how far that tells: the default run draws FAST_AUDITS = 300 audits per setting,
so a coverage is measured to +/-0.013 (one binomial standard error at 0.95). Every setting held 0.940
or more with these seeds. At 300 audits the floor catches an interval that fell to 0.90 (it would
pass with probability under 0.01), not a slide to 0.93: that is what `-m slow` is for, drawing
SLOW_AUDITS = 2,000 per setting (+/-0.005) against the same floor; there the lowest was 0.940 (the
main job's shape, the wrong-cell judge, stratified, 30 labels, FPR). scripts/measure_coverage.py
draws more for the table in docs/explanation/corrected-scorecards.md. Statistical, never timed;
every seed is fixed.
"""

from __future__ import annotations

import pytest

from tests.unit.audit.coverage_sim import (
    JUDGES,
    POPULATIONS,
    SIZES,
    Coverage,
    cluster_coverage,
    conversation_run,
    single_prompt_coverage,
    single_prompt_run,
)

FLOOR = 0.93
FAST_AUDITS = 300
SLOW_AUDITS = 2000

SINGLE = [
    (run, design, n, judge)
    for run in POPULATIONS
    for design in ("random", "stratified")
    for n in SIZES
    for judge in JUDGES
]
CLUSTER = [(n, judge) for n in SIZES for judge in JUDGES]


def _check(tallies: dict[str, Coverage], audits: int) -> None:
    for name, tally in tallies.items():
        # Every audit that labelled a unit of the domain gives an interval, however few its labels.
        assert tally.defined == tally.labelled, (name, tally.defined, tally.labelled)
        assert tally.defined >= 0.95 * audits, (name, tally.defined)
        assert tally.rate >= FLOOR, (name, round(tally.rate, 3), round(tally.mean_width, 3))


def _single(run: str, design: str, n: int, judge: str, audits: int) -> dict[str, Coverage]:
    seed = 1 + SINGLE.index((run, design, n, judge))
    return single_prompt_coverage(single_prompt_run(run), judge, design, n, audits, seed)  # type: ignore[arg-type]


def _cluster(n: int, judge: str, audits: int) -> dict[str, Coverage]:
    return cluster_coverage(conversation_run(), judge, n, audits, seed=200 + CLUSTER.index((n, judge)))


@pytest.mark.parametrize(("run", "design", "n", "judge"), SINGLE, ids=["-".join(map(str, s)) for s in SINGLE])
def test_single_prompt_runs(run: str, design: str, n: int, judge: str):
    _check(_single(run, design, n, judge, FAST_AUDITS), FAST_AUDITS)


@pytest.mark.parametrize(("n", "judge"), CLUSTER, ids=["-".join(map(str, s)) for s in CLUSTER])
def test_conversations_drawn_whole(n: int, judge: str):
    _check(_cluster(n, judge, FAST_AUDITS), FAST_AUDITS)


def test_audits_whose_labels_missed_a_verdict_cell_still_cover():
    """Where the labels-only fallback used to stand in (an audit that labelled none of one of the
    judge's verdict cells; it held 0.63-0.89 of them under a judge that leaves the mishandled cases
    unscored), pooled over the random design's settings: the unlabelled cell's whole range is in the
    interval, and coverage holds."""
    pooled = Coverage()
    for run, design, n, judge in SINGLE:
        if design != "random":
            continue
        for tally in _single(run, design, n, judge, FAST_AUDITS).values():
            pooled.sparse += tally.sparse
            pooled.sparse_covered += tally.sparse_covered
    assert pooled.sparse >= 500, pooled.sparse
    assert pooled.sparse_covered / pooled.sparse >= FLOOR, (pooled.sparse_covered, pooled.sparse)


@pytest.mark.slow
@pytest.mark.parametrize(("run", "design", "n", "judge"), SINGLE, ids=["-".join(map(str, s)) for s in SINGLE])
def test_single_prompt_runs_at_length(run: str, design: str, n: int, judge: str):
    _check(_single(run, design, n, judge, SLOW_AUDITS), SLOW_AUDITS)


@pytest.mark.slow
@pytest.mark.parametrize(("n", "judge"), CLUSTER, ids=["-".join(map(str, s)) for s in CLUSTER])
def test_conversations_drawn_whole_at_length(n: int, judge: str):
    _check(_cluster(n, judge, SLOW_AUDITS), SLOW_AUDITS)
