"""The main job: one test per prompt-variant of the configured packs (see README)."""


def test_case(guardbench_outcome):
    guardbench_outcome.require_handled()
