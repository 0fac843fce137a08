"""Which finished records go into results.jsonl with the one being reported: in one process, the
engine finishes the cases after the current test before their own reports, and writing them in the
same batch makes one write of many records instead of one write each."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pytest

from pytest_guardbench.plugin.worker import case_of
from pytest_guardbench.records import CaseRecord

if TYPE_CHECKING:
    from pytest_guardbench.run.engine import Engine

# At most this many records written ahead of their tests in one batch (one write, bounded memory).
WRITE_AHEAD = 256


class WriteAhead:
    """The items of this process in order, and how far records were written ahead of their tests."""

    def __init__(self) -> None:
        self._items: Sequence[pytest.Item] = ()
        self._positions: dict[str, int] = {}
        self._upto = 0

    def collected(self, items: Sequence[pytest.Item]) -> None:
        self._items = items
        self._positions = {item.nodeid: i for i, item in enumerate(items)}

    def finished_after(self, nodeid: str, engine: Engine | None) -> list[CaseRecord]:
        """The records of the tests after `nodeid` that `engine` has finished already, in item order (as
        they will report). None under xdist (no engine here), where records arrive on reports one at a
        time, and none while the batch written before is not used up: the file is never more than one
        batch ahead of the reports."""
        position = self._positions.get(nodeid)
        if engine is None or position is None or self._upto > position + 1:
            return []
        following = self._items[position + 1 : position + 1 + WRITE_AHEAD]
        records = engine.finished(case_of(item) for item in following)
        self._upto = position + 1 + len(records)
        return records
