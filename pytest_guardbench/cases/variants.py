"""Expanding validated pack items into cases: each selected variant (a mutator, a conversation
variant, a family of them, or a chain such as `typo+camouflage`) applied to each base prompt, plus the
run's table of variants (`MutatorRegistry`) and stable sharding by base prompt. The mutators
themselves are in `mutators`, the conversation variants in `conversations`."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import TypeAlias

from pytest_guardbench.errors import UsageError
from pytest_guardbench.cases.conversations import CONVERSATION_VARIANTS, ConversationVariant, Script, as_script
from pytest_guardbench.cases.mutators import BUILTIN_MUTATORS, FAMILIES, Mutator
from pytest_guardbench._util.registry import Registry
from pytest_guardbench.records import Case, PackItem, Turn

__all__ = [
    "BUILTIN_MUTATORS",
    "BUILTIN_VARIANTS",
    "CONVERSATION_VARIANTS",
    "FAMILIES",
    "ConversationVariant",
    "Mutator",
    "MutatorRegistry",
    "Variant",
    "VariantError",
    "expand",
    "in_shard",
    "sample_cases",
]

CHAIN_SEPARATOR = "+"
# Mutator families that change only a conversation's last user turn (see `converse`).
REQUEST_ONLY_FAMILIES = frozenset({"framing", "encoding"})

# A unit `--guardbench-variants` can name: a text mutator, or a conversation variant that builds turns.
Variant: TypeAlias = Mutator | ConversationVariant

# Every built-in variant, single-turn mutators first; `BUILTIN_MUTATORS` stays the text-only table.
BUILTIN_VARIANTS: Mapping[str, Variant] = MappingProxyType({**BUILTIN_MUTATORS, **CONVERSATION_VARIANTS})


class MutatorRegistry(Registry[Variant]):
    """The run's variants by name; conftest files add theirs through `pytest_guardbench_register_mutators`.
    A variant is a pure function, so its "factory" only hands back the unit."""

    def __init__(self) -> None:
        super().__init__("variant")

    def add(self, mutator: Variant) -> None:
        if CHAIN_SEPARATOR in mutator.name or not mutator.name.strip():
            raise UsageError(
                f"variant {mutator.name!r}: a mutator name must be non-empty and free of {CHAIN_SEPARATOR!r}"
            )
        self.register(mutator.name, lambda options: mutator, mutator.description)

    def table(self) -> Mapping[str, Variant]:
        # Registration order, not sorted: a family expands in the order its mutators were added.
        return MappingProxyType({name: entry.factory(None) for name, entry in self._entries.items()})


def builtin_mutators() -> MutatorRegistry:
    """The built-in text mutators only."""
    registry = MutatorRegistry()
    for mutator in BUILTIN_MUTATORS.values():
        registry.add(mutator)
    return registry


def builtin_variants() -> MutatorRegistry:
    """Every built-in variant a run can select: the text mutators, then the conversation variants."""
    registry = builtin_mutators()
    for variant in CONVERSATION_VARIANTS.values():
        registry.add(variant)
    return registry


def families_of(mutators: Mapping[str, Variant]) -> tuple[str, ...]:
    """The family names a run can select: the built-in three, then any a registered mutator brings."""
    extra = sorted({m.family for m in mutators.values()} - {"none", *FAMILIES})
    return (*FAMILIES, *extra)


def family_of(variant: str, mutators: Mapping[str, Variant] = BUILTIN_VARIANTS) -> str:
    """The family a variant name belongs to: a mutator's family, `chain`, or `data` for variants
    that only exist in a pre-expanded pack."""
    if variant in mutators:
        return mutators[variant].family
    if CHAIN_SEPARATOR in variant and all(part in mutators for part in variant.split(CHAIN_SEPARATOR)):
        return "chain"
    return "data"


def resolve_variant_names(
    requested: tuple[str, ...], mutators: Mapping[str, Variant] = BUILTIN_MUTATORS
) -> tuple[str, ...]:
    """Expand family names into their mutators, keep chains and plain names; first mention wins."""
    names: list[str] = []
    for name in requested:
        members = [m.name for m in mutators.values() if m.family == name] if name in families_of(mutators) else [name]
        names.extend(n for n in members if n not in names)
    return tuple(names)


def mutate(variant: str, text: str, key: str, mutators: Mapping[str, Variant] = BUILTIN_MUTATORS) -> str:
    """Apply a mutator or a chain (`typo+camouflage`: typo first), each step seeded by key and step."""
    for step, name in enumerate(variant.split(CHAIN_SEPARATOR)):
        unit = mutators[name]
        if isinstance(unit, ConversationVariant):
            raise VariantError(f"{name!r} builds a conversation and has no single-prompt text; use `converse`")
        text = unit.apply(text, key if step == 0 else f"{key}#{step}")
    return text


def builds_turns(variant: str, mutators: Mapping[str, Variant] = BUILTIN_VARIANTS) -> bool:
    """Whether a variant (or any step of a chain) is a conversation variant."""
    return any(isinstance(mutators.get(name), ConversationVariant) for name in variant.split(CHAIN_SEPARATOR))


def converse(variant: str, script: Script, key: str, mutators: Mapping[str, Variant] = BUILTIN_VARIANTS) -> Script:
    """Apply a variant or a chain to a conversation script, step by step as `mutate` does. A framing or
    encoding mutator changes the last user turn, the request, as an attacker wraps or encodes it; any
    other text mutator (typos, leetspeak) changes every user turn, as a child types throughout; each
    is seeded by the step's key and the turn's index, and fixed assistant turns stay as they are. A
    conversation variant rebuilds the script."""
    for step, name in enumerate(variant.split(CHAIN_SEPARATOR)):
        unit = mutators[name]
        step_key = key if step == 0 else f"{key}#{step}"
        if isinstance(unit, ConversationVariant):
            script = unit.apply(script, step_key)
            continue
        users = [index for index, turn in enumerate(script) if turn.role == "user"]
        # A jailbreak wrapper around every turn of a chat reads as no child or attacker would write it.
        changed = set(users[-1:]) if unit.family in REQUEST_ONLY_FAMILIES else set(users)
        script = tuple(
            turn.model_copy(update={"content": unit.apply(turn.content, f"{step_key}@{index}")})
            if index in changed
            else turn
            for index, turn in enumerate(script)
        )
    return script


def _known(name: str, mutators: Mapping[str, Variant]) -> bool:
    return name in mutators or (
        CHAIN_SEPARATOR in name and all(part in mutators and part != "original" for part in name.split(CHAIN_SEPARATOR))
    )


class VariantError(UsageError):
    """A requested variant is neither a mutator nor present in the data."""


def expand(
    items: list[PackItem],
    selected: tuple[str, ...],
    samples: int = 1,
    mutators: Mapping[str, Variant] = BUILTIN_MUTATORS,
    excluded: tuple[str, ...] = (),
) -> list[Case]:
    """Turn validated items into cases, one per (item, selected variant, sample).

    `selected` and `excluded` are names, families or chains as written (`--guardbench-variants`,
    `--guardbench-exclude-variants`); both are checked, so a misspelt name on either side is an error
    rather than a selection that silently measures less. Items whose metadata already names a
    non-original variant (pre-expanded packs) are kept as they are; `original` items are run through
    every selected mutator unless the data already holds that variant for the same base prompt. Order
    follows the data, never a set, so every process agrees.
    """
    requested = resolve_variant_names(selected, mutators)
    dropped = resolve_variant_names(excluded, mutators)
    present = {item.variant for item in items}
    for option, names in (("--guardbench-variants", requested), ("--guardbench-exclude-variants", dropped)):
        unknown = [name for name in names if not _known(name, mutators) and name not in present]
        if unknown:
            known = sorted(set(mutators) | present)
            raise VariantError(
                f"{option}: unknown variant {unknown[0]!r}; known: {', '.join(known)}; "
                f"families: {', '.join(families_of(mutators))}; chains join names with '+'"
            )
    selected = tuple(name for name in requested if name not in dropped)
    if requested and not selected:
        raise VariantError(
            f"--guardbench-exclude-variants: {','.join(excluded)} leaves nothing of "
            f"--guardbench-variants={','.join(requested)} to run"
        )
    for item in items:
        # A misspelt pre-expanded variant would otherwise drop its items without a word.
        if item.variant != "original" and item.variant not in selected and not _known(item.variant, mutators):
            raise VariantError(
                f"{item.source_file}: {item.location} (id {item.item_id!r}): metadata.variant {item.variant!r} "
                "is not a known variant; "
                f"fix the name, or run it by naming it in --guardbench-variants; known: {', '.join(sorted(mutators))}"
            )
    shipped = {(item.pack, item.base_prompt_id, item.variant) for item in items}
    cases: list[Case] = []
    for item in items:
        if item.variant != "original":
            if item.variant in selected:
                family = family_of(item.variant, mutators)
                cases.extend(sample_cases(item, item.variant, item.prompt_text, item.turns, samples, family))
            continue
        for name in selected:
            if not _known(name, mutators):
                continue
            if name != "original" and (item.pack, item.base_prompt_id, name) in shipped:
                continue
            key = f"{item.pack}/{item.item_id}/{name}"
            if item.turns or builds_turns(name, mutators):
                script = converse(name, as_script(item.prompt_text, item.turns), key, mutators)
                text = next(turn.content for turn in reversed(script) if turn.role == "user")
            else:
                script, text = (), mutate(name, item.prompt_text, key, mutators)
            cases.extend(sample_cases(item, name, text, script, samples, family_of(name, mutators)))
    if items and not cases:
        carried = sorted(present - {"original"})
        files = sorted({item.source_file for item in items})
        raise VariantError(
            f"{', '.join(files)}: no case to run: every item already carries a variant ({', '.join(carried)}) and "
            f"--guardbench-variants={','.join(selected)} selects none of them; name them, e.g. "
            f"--guardbench-variants={','.join(carried[:3])}"
        )
    return cases


def sample_cases(
    item: PackItem, variant: str, text: str, turns: tuple[Turn, ...], samples: int, family: str
) -> list[Case]:
    """The `samples` cases of one item in one variant, ids `<pack>.<item>.<variant>` (`.k<n>` when k > 1)."""
    base_id = f"{item.pack}.{item.item_id}.{variant}"
    return [
        Case(
            case_id=base_id if samples == 1 else f"{base_id}.k{k}",
            pack=item.pack,
            item_id=item.item_id,
            base_prompt_id=item.base_prompt_id,
            variant=variant,
            sample_index=k,
            prompt_text=text,
            is_harmful=item.is_harmful,
            label_source=item.label_source,
            category=item.category,
            source_file=item.source_file,
            variant_family=family,
            turns=turns,
        )
        for k in range(samples)
    ]


def in_shard(case: Case, shard: tuple[int, int] | None) -> bool:
    """Stable shard membership by base prompt (sha256, not list position): every variant and sample
    of a base prompt lands in the same shard, and reordering a pack moves nothing."""
    if shard is None:
        return True
    index, total = shard
    digest = hashlib.sha256(f"{case.pack}/{case.base_prompt_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % total == index - 1
