"""The one rule for adding up the counters of a run's parts: numbers add, texts keep the first value,
and a `lowest_*` limit adds up over parts that split one limit and is the lowest over parts that each
had all of it."""

from __future__ import annotations

import pytest

from pytest_guardbench._util.counters import add_counts
from pytest_guardbench.document.execution import Execution
from pytest_guardbench.runfolder.execution import merged_execution


def _parts() -> list[dict]:
    return [
        {
            "calls": 6,
            "mode": "read",
            "lowest_concurrency": 4,
            "endpoints": {"u": {"calls": 2, "lowest_concurrency": 4}},
        },
        {
            "calls": 3,
            "mode": "write",
            "lowest_concurrency": 2,
            "endpoints": {"u": {"calls": 1, "lowest_concurrency": 1}},
        },
    ]


@pytest.mark.parametrize("shared_limit", [True, False])
def test_numbers_add_up_at_every_depth_and_texts_keep_the_first_value(shared_limit):
    merged = add_counts(_parts(), shared_limit=shared_limit)
    assert merged["calls"] == 9 and merged["endpoints"]["u"]["calls"] == 3
    assert merged["mode"] == "read"


def test_parts_that_split_one_limit_add_their_lowest_limits():
    # Two call processes holding 4 of a concurrency of 8 each, one of them halved twice: 4 + 2 at the lowest.
    merged = add_counts(_parts(), shared_limit=True)
    assert merged["lowest_concurrency"] == 6 and merged["endpoints"]["u"]["lowest_concurrency"] == 5


def test_parts_that_each_had_the_whole_limit_keep_the_lowest():
    merged = add_counts(_parts(), shared_limit=False)
    assert merged["lowest_concurrency"] == 2 and merged["endpoints"]["u"]["lowest_concurrency"] == 1


def test_a_part_that_never_counted_a_limit_does_not_read_as_a_limit_of_zero():
    merged = add_counts([{"calls": 1}, {"calls": 1, "lowest_concurrency": 3}], shared_limit=False)
    assert merged == {"calls": 2, "lowest_concurrency": 3}


def test_the_parts_are_left_as_they_were():
    parts = _parts()
    add_counts(parts, shared_limit=True)
    assert parts == _parts()


def test_merged_shards_keep_the_lowest_limit_of_any_shard():
    shards = [
        {"api_calls": {"tutor": {"calls": 7, "lowest_concurrency": 7}}},
        {"api_calls": {"tutor": {"calls": 8, "lowest_concurrency": 6}}},
    ]
    execution = merged_execution(map(Execution.model_validate, shards), shared_limit=False).model_dump(mode="json")
    assert execution["api_calls"]["tutor"] == {"calls": 15, "lowest_concurrency": 6}


def test_the_workers_of_one_run_add_their_shares_of_its_limit():
    # A concurrency of 8 under -n 2: each worker holds 4, never lowered; the run reports 8, as under -n 0.
    workers = [{"cases_run": 3, "api_calls": {"tutor": {"calls": 3, "lowest_concurrency": 4}}}] * 2
    execution = merged_execution(map(Execution.model_validate, workers)).model_dump(mode="json")
    assert execution["cases_run"] == 6 and execution["api_calls"]["tutor"] == {"calls": 6, "lowest_concurrency": 8}
