"""How an xdist controller hands out the cases of a run that calls only API models: every worker
is sent its whole share at the start, so its engine has all of it in flight at once.

xdist's default (`--dist load`) sends each worker a quarter of its share and tops it up as tests
finish, waiting while the last tests took 0.1 s or more. A case's test waits for its record, so
each worker's engine ran dry before every top-up: `-n 2` took half again as long as one process
(bench/bench_fixed_costs.py). A local model keeps xdist's own scheduling, which balances uneven
work. Imports xdist: loaded only from the xdist hook."""

from __future__ import annotations

from typing import Any

from xdist.scheduler import LoadScheduling  # type: ignore[import-untyped]


class WholeShareScheduling(LoadScheduling):
    """`--dist load`, except that the collection is split into one contiguous share per worker, all
    sent at once (contiguous, as xdist keeps a module's tests together for its fixtures)."""

    collection: list[str] | None
    maxschedchunk: int | None

    def schedule(self) -> None:
        assert self.collection_is_completed
        if self.collection is not None:  # a node added later: the base class tops it up
            for node in self.nodes:
                self.check_schedule(node)
            return
        if not self._check_nodes_have_same_collection():
            self.log("**Different tests collected, aborting run**")
            return
        collection: list[str] = next(iter(self.node2collection.values()))
        self.collection = collection
        self.pending[:] = range(len(collection))
        if not collection:
            return
        # The base class tops up a worker that replaces a crashed one with what was left; its top-ups
        # read the chunk size, which only its own `schedule` would have set.
        if self.maxschedchunk is None:
            self.maxschedchunk = len(collection)
        nodes = list(self.nodes)
        for position, node in enumerate(nodes):
            share = len(self.pending) // (len(nodes) - position)
            if share:
                self._send_tests(node, share)
        for node in nodes:
            node.shutdown()


def whole_share_scheduler(config: Any, log: Any) -> WholeShareScheduling:
    return WholeShareScheduling(config, log)
