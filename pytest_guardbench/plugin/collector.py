"""The garbage collector's passes over what a run keeps until it ends.

A process of a run holds tens of thousands of long-lived objects (modules, model classes, its cases
and test items), and the collector's full passes walk all of them: those it makes during the test
loop, pytest's two at the end (to surface unraisable exceptions) and the interpreter's at exit. In a
replay of 1,000 cases they were a fifth of the process's CPU; in the controller of a 1,000-case
`-n 2` run, which keeps every worker's reports, the passes at its end took half a second. So a
process that runs cases, and an xdist controller, moves what is alive when its test loop starts
into the collector's permanent generation (`gc.freeze`),
and at its end collects once, as pytest would, then freezes what is left, so the passes after it
walk only new objects. Objects frozen are still freed when nothing refers to them; only a reference
cycle among them would be kept until the process ends, which it is about to.

Not in a pytest run inside another (pytester's in-process runs, a notebook running pytest twice):
the outer process goes on, and must keep collecting what the inner run leaves behind. Such a run
sees the outer test's `PYTEST_CURRENT_TEST` in its environment (a child process of a test inherits
it too, and then only forgoes the saving)."""

from __future__ import annotations

import gc
import os

import pytest

from pytest_guardbench.plugin.keys import FROZEN_KEY


def may_freeze() -> bool:
    """Whether this process is a pytest run of its own, not one inside another's test."""
    return "PYTEST_CURRENT_TEST" not in os.environ


def freeze_long_lived(config: pytest.Config) -> None:
    """At the start of the test loop of a process that runs cases or of an xdist controller: what is
    alive now lives until the end, and this process collects once at its end (`pytest_unconfigure`)."""
    config.stash[FROZEN_KEY] = may_freeze()
    if config.stash[FROZEN_KEY]:
        gc.freeze()


@pytest.hookimpl(tryfirst=True)  # before pytest's own collections at unconfigure
def pytest_unconfigure(config: pytest.Config) -> None:
    """At the end, before pytest's own collections: one full pass, as pytest's first would make, then
    everything left is frozen."""
    if config.stash.get(FROZEN_KEY, False):
        gc.collect()
        gc.freeze()
