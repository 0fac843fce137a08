"""The expanded pack `guardbench expand` writes, so reviewers can diff the exact prompts a run will use."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_guardbench.cases.sources import load_sources
from pytest_guardbench.cases.variants import builtin_variants, expand
from pytest_guardbench.records import Turn


def expanded_pack(path: Path, variants: Sequence[str], harmful_categories: Sequence[str]) -> dict[str, Any]:
    """The pack at `path` with every item expanded into the given variants, in loader format.

    Variant items get id `<item>--<variant>`, `metadata.variant`, `metadata.base_prompt_id` and a
    `variant:<name>` tag, so loading the result and selecting the same variants reproduces the run.
    A conversation case is written as `turns` (no `prompt_text`), with each turn's label and source.
    """
    data = load_sources([path], harmful_categories)
    by_id = {item.item_id: item for item in data.items}
    document = json.loads(path.read_text(encoding="utf-8-sig")) if path.suffix == ".json" else {}
    items = []
    for case in expand(list(data.items), tuple(variants), mutators=builtin_variants().table()):
        source = by_id[case.item_id]
        metadata = dict(source.metadata)
        if case.variant != source.variant:
            metadata.update(
                variant=case.variant,
                base_prompt_id=source.base_prompt_id,
                variant_tags=[f"variant:{case.variant}"],
                mutator_family=case.variant_family,
            )
        item_id = source.item_id if case.variant == source.variant else f"{source.item_id}--{case.variant}"
        text: dict[str, object] = (
            {"turns": [_turn(turn) for turn in case.turns]} if case.turns else {"prompt_text": case.prompt_text}
        )
        items.append({"id": item_id, **text, "metadata": metadata})
    return {
        "name": data.sources[0].pack,
        "source": f"{document.get('source') or path.name}; expanded by pytest-guardbench ({', '.join(variants)})",
        "subset": document.get("subset"),
        "items": items,
    }


def _turn(turn: Turn) -> str | dict[str, object]:
    # The loader's short form where it says everything: a plain string is a user turn from the pack.
    if turn.role == "user" and turn.is_harmful is None and turn.source == "pack":
        return turn.content
    return turn.model_dump(exclude_defaults=True)
