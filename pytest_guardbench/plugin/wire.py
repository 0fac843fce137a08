"""What crosses from a test process (an xdist worker, or the only process) to the controller: the
record and its score on each `TestReport`, and the worker's small output at its end."""

from __future__ import annotations

# Report attributes: the case's record (a JSON dict) and its score, made once where the test ran.
# Only an xdist worker's reports carry them; the only process hands its records to its session as
# they are (`GuardbenchSession.hand_over`), without the round trip through JSON.
RECORD_ATTR = "guardbench_record"
SCORE_ATTR = "guardbench_score"
# The hidden fixture that every case fixture depends on and that parametrisation targets.
SLOT_FIXTURE = "_guardbench_slot"
WORKER_OUTPUT_KEY = "guardbench"


def case_id_of(nodeid: str) -> str | None:
    """The case id in a generated test's node id (its parameter id), or None for any other test."""
    if not nodeid.endswith("]") or "[" not in nodeid:
        return None
    return nodeid[nodeid.rindex("[") + 1 : -1]
