"""`guardbench expand`: write a pack expanded into its stress variants, so reviewers can diff the
exact prompts a run will use."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pytest_guardbench.cases.sources import label_conflict_warning, load_sources
from pytest_guardbench.commands.exit_status import OK, USAGE_ERROR
from pytest_guardbench.errors import UsageError
from pytest_guardbench._util.files import write_files
from pytest_guardbench._util.package_data import data_path
from pytest_guardbench._util.redact import redact, redact_json
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
    path = data_path(args.pack)
    pack = expanded_pack(path, variants, categories)
    conflicts = label_conflict_warning(load_sources([path], categories).items)
    if conflicts:
        print(redact(f"guardbench expand: warning: {conflicts}"), file=sys.stderr)
    # Redacted like every artifact: a prompt that quotes a key is not copied into another file.
    text = json.dumps(redact_json(pack), indent=2, ensure_ascii=False) + "\n"
    if args.output in (None, "-"):
        sys.stdout.write(text)
        return OK
    out = Path(args.output)
    if not out.parent.is_dir():
        raise UsageError(f"-o {out}: folder {out.parent} does not exist")
    if out.is_dir():
        raise UsageError(f"-o {out}: is a folder; name a file in it")
    # Through a temporary file: a full disk or a killed process leaves the old file, never half of the new one.
    try:
        write_files([(out, text)])
    except OSError as exc:
        print(redact(f"guardbench expand: -o {out}: cannot write it ({exc.strerror or exc})"), file=sys.stderr)
        return USAGE_ERROR
    print(f"wrote {len(pack['items'])} items to {out}", file=sys.stderr)
    return OK
