"""Adding up the counters that the parts of a run report: API call processes, xdist workers, shards."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeAlias

from pytest_guardbench.errors import InternalError

# One counter: a number; a string or boolean kept as it is (a mode, a path, a reason); None for a
# count not taken; or a block of counters (one endpoint's, one process's).
Count: TypeAlias = "int | float | str | bool | None | dict[str, Count]"
Counts: TypeAlias = "dict[str, Count]"


def add_counts(parts: Iterable[Mapping[str, Count]], *, shared_limit: bool) -> Counts:
    """The parts' counters (nested dicts of numbers) added up; strings (a mode, a path, a reason) and
    booleans keep the first value seen.

    A `lowest_*` key is the lowest value an adaptive concurrency limit fell to, and is merged so that
    it stays on the scale of the configured concurrency, which is why the rule depends on the parts:
    - `shared_limit=True`: the parts split one limit between them (a model's call processes each hold
      `concurrency / N`, as xdist workers do), so together they allowed the sum of their lowest values.
      The lowest of them would read as a limit halved that never was.
    - `shared_limit=False`: each part had the whole limit (the shards of a sharded run, each a run of
      its own), so the lowest of them is the lowest the run fell to.
    """
    merged: Counts = {}
    for part in parts:
        for key, value in part.items():
            if isinstance(value, dict):
                merged[key] = add_counts([_block(merged.get(key, {})), value], shared_limit=shared_limit)
            elif isinstance(value, bool) or not isinstance(value, int | float):
                merged.setdefault(key, value)
            elif key.startswith("lowest") and key in merged and not shared_limit:
                merged[key] = min(_number(merged[key]), value)
            else:
                merged[key] = _number(merged.get(key, 0)) + value
    return merged


def _block(count: Count) -> Mapping[str, Count]:
    if not isinstance(count, dict):
        raise InternalError(f"a block of counters meets a single counter: {count!r}")
    return count


def _number(count: Count) -> int | float:
    if not isinstance(count, int | float):
        raise InternalError(f"a number meets a counter that is not one: {count!r}")
    return count
