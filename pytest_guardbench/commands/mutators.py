"""`guardbench mutators`: list the built-in mutators by family."""

from __future__ import annotations

import argparse

from pytest_guardbench.cases.mutators import BUILTIN_MUTATORS, FAMILIES


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser("mutators", help="List the mutators by family.")
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    del args
    for family in ("none", *FAMILIES):
        print(f"{family}:")
        for mutator in BUILTIN_MUTATORS.values():
            if mutator.family == family:
                print(f"  {mutator.name}: {mutator.description}")
    return 0
