"""`guardbench` console script. `guardbench expand` writes an expanded pack so reviewers can diff
the exact prompts a run will use."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_guardbench.config import DEFAULT_VARIANTS, MINORBENCH_HARMFUL_CATEGORIES
from pytest_guardbench.data import DataError, load_sources
from pytest_guardbench.variants import BUILTIN_MUTATORS, FAMILIES, VariantError, expand, family_of


def expanded_pack(path: Path, variants: Sequence[str], harmful_categories: Sequence[str]) -> dict[str, Any]:
    """The pack at `path` with every item expanded into the given variants, in loader format.

    Variant items get id `<item>--<variant>`, `metadata.variant`, `metadata.base_prompt_id` and a
    `variant:<name>` tag, so loading the result and selecting the same variants reproduces the run.
    """
    data = load_sources([path], harmful_categories)
    by_id = {item.item_id: item for item in data.items}
    document = json.loads(path.read_text(encoding="utf-8")) if path.suffix == ".json" else {}
    items = []
    for case in expand(list(data.items), tuple(variants)):
        source = by_id[case.item_id]
        metadata = dict(source.metadata)
        if case.variant != source.variant:
            metadata.update(
                variant=case.variant,
                base_prompt_id=source.base_prompt_id,
                variant_tags=[f"variant:{case.variant}"],
                mutator_family=family_of(case.variant),
            )
        item_id = source.item_id if case.variant == source.variant else f"{source.item_id}--{case.variant}"
        items.append({"id": item_id, "prompt_text": case.prompt_text, "metadata": metadata})
    return {
        "name": data.sources[0].pack,
        "source": f"{document.get('source') or path.name}; expanded by pytest-guardbench ({', '.join(variants)})",
        "subset": document.get("subset"),
        "items": items,
    }


def _expand(args: argparse.Namespace) -> int:
    variants = tuple(v.strip() for v in args.variants.split(",") if v.strip())
    categories = tuple(c.strip().lower() for c in args.harmful_categories.split(",") if c.strip())
    try:
        pack = expanded_pack(Path(args.pack), variants, categories)
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


def _list(args: argparse.Namespace) -> int:
    del args
    for family in ("none", *FAMILIES):
        print(f"{family}:")
        for mutator in BUILTIN_MUTATORS.values():
            if mutator.family == family:
                print(f"  {mutator.name}: {mutator.description}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="guardbench", description="pytest-guardbench helper commands.")
    commands = parser.add_subparsers(dest="command", required=True)
    expand_cmd = commands.add_parser("expand", help="Write a pack expanded into stress variants.")
    expand_cmd.add_argument("pack", help="Pack (.json), dataset (.jsonl) or MinorBench CSV (.csv).")
    expand_cmd.add_argument("--variants", default=",".join(DEFAULT_VARIANTS), help="Names, families (character, encoding, framing) and chains (typo+camouflage).")
    expand_cmd.add_argument("--harmful-categories", default=",".join(MINORBENCH_HARMFUL_CATEGORIES), help="Category rule for unlabelled items.")
    expand_cmd.add_argument("-o", "--output", help="Output file (default: standard output).")
    expand_cmd.set_defaults(run=_expand)
    list_cmd = commands.add_parser("mutators", help="List the mutators by family.")
    list_cmd.set_defaults(run=_list)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    raise SystemExit(main())
