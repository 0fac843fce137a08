"""The draw an audit file records: a population hash that names the units and replies drawn from (and,
stratified, their strata), the draw made again from a run and compared (drawn, labelled, skipped,
outside), and the rule that warns when skipped units could bias the correction."""

from __future__ import annotations

from collections import Counter

from pytest_guardbench.audit.draw_record import (
    check_draw,
    draw_audit,
    population_of,
    population_sha256,
    skip_warning,
)
from tests.builders import V2, record, replied

RECORDS = [replied(record(f"h{i}", True, "safe", "refused_or_blocked"), f"reply h{i}") for i in range(10)] + [
    replied(record(f"s{i}", False, "safe", "answered", category="Safe"), f"reply s{i}") for i in range(10)
]


def test_the_population_hash_names_units_and_replies_and_strata_only_when_stratified():
    units = population_of(RECORDS, "random", V2)
    assert population_sha256("random", units) == population_sha256("random", list(reversed(units)))
    edited = [replied(RECORDS[0], "another reply"), *RECORDS[1:]]
    assert population_sha256("random", population_of(edited, "random", V2)) != population_sha256("random", units)
    rejudged = [
        record("h0", True, "unsafe", "answered").model_copy(update={"response": RECORDS[0].response}),
        *RECORDS[1:],
    ]
    assert population_sha256("random", population_of(rejudged, "random", V2)) == population_sha256("random", units)
    assert population_sha256("stratified", population_of(rejudged, "stratified", V2)) != population_sha256(
        "stratified", population_of(RECORDS, "stratified", V2)
    ), "the strata decide a stratified draw"


def test_a_recorded_draw_is_drawn_again_and_compared():
    draw = draw_audit(RECORDS, "random", 8, 3, V2)
    population = population_of(RECORDS, "random", V2)
    ids = [made.case_id for made, _ in draw.sample]
    check = check_draw(draw.recorded, "random", set(ids[:6]), population)
    assert (check.checked, check.drawn, check.labelled, check.skipped, check.outside) == ("redrawn", 8, 6, 2, 0)
    outsider = next(u.unit_id for u in population if u.unit_id not in ids)
    assert check_draw(draw.recorded, "random", {*ids, outsider}, population).outside == 1
    other = population_of([replied(RECORDS[0], "edited"), *RECORDS[1:]], "random", V2)
    moved = check_draw(draw.recorded, "random", set(ids[:6]), other)
    assert (moved.checked, moved.drawn, moved.skipped) == ("population differs", 8, 2)
    assert check_draw(None, "random", set(ids), population).checked == "not recorded"


def test_stratified_draws_are_drawn_again_by_their_strata():
    draw = draw_audit(RECORDS, "stratified", 6, 1, V2)
    check = check_draw(
        draw.recorded, "stratified", {m.case_id for m, _ in draw.sample}, population_of(RECORDS, "stratified", V2)
    )
    assert (check.checked, check.skipped, check.outside) == ("redrawn", 0, 0)


def test_skipped_units_are_warned_of_when_many_or_crowded_in_one_group():
    assert skip_warning(Counter(harmful=20, safe=20), Counter()) is None
    assert skip_warning(Counter(harmful=20, safe=20), Counter(harmful=1, safe=1)) is None, "5%, spread"
    many = skip_warning(Counter(harmful=20, safe=20), Counter(harmful=2, safe=2))
    assert many is not None and many.startswith("4 of the 40 drawn units were skipped (10%)")
    crowded = skip_warning(Counter(harmful=25, safe=15), Counter(harmful=3))
    assert crowded is not None and "3 of the 25 in harmful" in crowded, "all in one domain"
    assert skip_warning(Counter(harmful=25, safe=15), Counter(harmful=1)) is None, "one skipped unit is no pattern"
    assert skip_warning(Counter(the_draw=40), Counter(the_draw=3)) is None, "one group: only the share counts"
