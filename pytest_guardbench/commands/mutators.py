"""`guardbench mutators`: list the built-in mutators and conversation variants by family."""

from __future__ import annotations

import argparse

from pytest_guardbench.cases.mutators import FAMILIES
from pytest_guardbench.cases.variants import BUILTIN_VARIANTS
from pytest_guardbench.commands.exit_status import OK


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser("mutators", help="List the mutators by family.")
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    del args
    for family in ("none", *FAMILIES, "conversation"):
        print(f"{family}:")
        for mutator in BUILTIN_VARIANTS.values():
            if mutator.family == family:
                print(f"  {mutator.name}: {mutator.description}")
    return OK
