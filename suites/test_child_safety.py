"""The main job: one test per prompt-variant of the configured packs (see README). The test itself is
the packaged suite, the same one a user's repository imports."""

from pytest_guardbench.suite import test_case

__all__ = ["test_case"]
