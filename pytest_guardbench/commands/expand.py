"""`guardbench expand`: write a pack expanded into its stress variants, so reviewers can diff the
exact prompts a run will use."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pytest_guardbench.cases.sources import DataError
from pytest_guardbench.cases.variants import VariantError
from pytest_guardbench._util.package_data import data_path
from pytest_guardbench.cases.expanded_pack import expanded_pack
from pytest_guardbench.settings.config import DEFAULT_VARIANTS, MINORBENCH_HARMFUL_CATEGORIES


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser("expand", help="Write a pack expanded into stress variants.")
    command.add_argument(
        "pack",
        help="Pack (.json), dataset (.jsonl) or MinorBench CSV (.csv), or a shipped one's name (child_safety_v1).",
    )
    command.add_argument(
        "--variants",
        default=",".join(DEFAULT_VARIANTS),
        help="Names, families (character, encoding, framing) and chains (typo+camouflage).",
    )
    command.add_argument(
        "--harmful-categories",
        default=",".join(MINORBENCH_HARMFUL_CATEGORIES),
        help="Category rule for unlabelled items.",
    )
    command.add_argument("-o", "--output", help="Output file (default: standard output).")
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    variants = tuple(v.strip() for v in args.variants.split(",") if v.strip())
    categories = tuple(c.strip().lower() for c in args.harmful_categories.split(",") if c.strip())
    try:
        pack = expanded_pack(data_path(args.pack), variants, categories)
    except (DataError, VariantError) as exc:
        print(f"guardbench expand: {exc}", file=sys.stderr)
        return 4
    text = json.dumps(pack, indent=2, ensure_ascii=False) + "\n"
    if args.output in (None, "-"):
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote {len(pack['items'])} items to {args.output}", file=sys.stderr)
    return 0
