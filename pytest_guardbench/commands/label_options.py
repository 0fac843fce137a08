"""The options of a command that makes a run from other runs' records (`rejudge`, `merge`) about the
labels those runs were corrected with: `--labels FILE` names them where they are now, `--no-labels`
leaves them behind; and the lines that say which it did, so a corrected run never turns into a
judge-only one without a word."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from pytest_guardbench.document.summary import RunSummary
from pytest_guardbench.results.corrected import metric_text


def add_label_options(command: argparse.ArgumentParser, made: str) -> None:
    """`--labels` (repeatable) and `--no-labels`, which exclude each other."""
    group = command.add_mutually_exclusive_group()
    group.add_argument(
        "--labels",
        action="append",
        metavar="FILE",
        help=f"A labels file the run was corrected with, where it is now (it moved); repeat it for each file. The "
        f"{made} run is corrected by them.",
    )
    group.add_argument(
        "--no-labels",
        action="store_true",
        help=f"Leave the labels a run was corrected with behind: the {made} run is judge-only, and says so.",
    )


def carried_lines(sources: RunSummary | Sequence[RunSummary] | None, made: RunSummary) -> list[str]:
    """What became of the sources' labels in the run `made` from them, in a line or two."""
    given = [] if sources is None else [sources] if isinstance(sources, RunSummary) else list(sources)
    before = sorted(
        {
            name
            for s in given
            if s.corrected
            for name in s.corrected.labels.labels_files or [s.corrected.labels.labels_file]
        }
    )
    if made.corrected is None:
        if not before:
            return []
        return [
            f"judge-only: the labels the run was corrected with ({', '.join(before)}) were left behind (--no-labels)"
        ]
    use = made.corrected.labels
    files = ", ".join(use.labels_files or [use.labels_file])
    return [
        f"corrected by {use.used} labels ({files}); "
        f"system recall {metric_text(made.corrected.scorecards.system.recall)}"
    ]
