"""`guardbench` console script: assembles one parser from the subcommands, each a thin module of
this package, and runs the one named."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from pytest_guardbench.commands import (
    audit,
    compare,
    expand,
    import_seed,
    judge_quality,
    label_agreement,
    merge,
    mutators,
    rejudge,
    screen,
)

# In the order `guardbench --help` lists them.
SUBCOMMANDS = (expand, rejudge, import_seed, merge, compare, judge_quality, audit, screen, label_agreement, mutators)


def build_parser() -> argparse.ArgumentParser:
    """The parser `main` runs; the docs render the command reference from it."""
    parser = argparse.ArgumentParser(prog="guardbench", description="pytest-guardbench helper commands.")
    commands = parser.add_subparsers(dest="command", required=True)
    for subcommand in SUBCOMMANDS:
        subcommand.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
