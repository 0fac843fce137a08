"""`guardbench` console script: assembles one parser from the subcommands, each a thin module of
this package, and runs the one named."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from pytest_guardbench.commands import (
    audit,
    compare,
    correct,
    expand,
    import_seed,
    init,
    judge_quality,
    label_agreement,
    merge,
    mutators,
    rejudge,
    screen,
)

from pytest_guardbench.commands.exit_status import INTERRUPTED, USAGE_ERROR, exit_status_table

# In the order `guardbench --help` lists them.
SUBCOMMANDS = (
    init,
    expand,
    rejudge,
    import_seed,
    merge,
    compare,
    judge_quality,
    audit,
    correct,
    screen,
    label_agreement,
    mutators,
)


class CommandParser(argparse.ArgumentParser):
    """argparse with the project's usage-error status: 4, as pytest's, since 2 means interrupted here."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message}\n")


def build_parser() -> CommandParser:
    """The parser `main` runs; the docs render the command reference from it."""
    parser = CommandParser(
        prog="guardbench",
        description="pytest-guardbench helper commands.",
        epilog=f"exit statuses (of these commands and of pytest runs):\n{exit_status_table()}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for subcommand in SUBCOMMANDS:
        subcommand.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.run(args)
    except KeyboardInterrupt:
        print(f"guardbench {args.command}: interrupted", file=sys.stderr)
        return INTERRUPTED
    return code


if __name__ == "__main__":
    raise SystemExit(main())
