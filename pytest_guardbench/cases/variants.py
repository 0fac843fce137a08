"""Expanding validated pack items into cases: each selected variant (a mutator, a family of them,
or a chain such as `typo+camouflage`) applied to each base prompt, plus the run's table of mutators
(`MutatorRegistry`) and stable sharding by base prompt. The mutators themselves are in `mutators`."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from types import MappingProxyType

from pytest_guardbench.errors import UsageError
from pytest_guardbench.cases.mutators import BUILTIN_MUTATORS, FAMILIES, Mutator
from pytest_guardbench._util.registry import Registry
from pytest_guardbench.records import Case, PackItem

__all__ = ["BUILTIN_MUTATORS", "FAMILIES", "Mutator", "MutatorRegistry", "VariantError", "expand", "in_shard"]

CHAIN_SEPARATOR = "+"


class MutatorRegistry(Registry[Mutator]):
    """The run's mutators by name; conftest files add theirs through `pytest_guardbench_register_mutators`.
    A mutator is a pure function, so its "factory" only hands back the unit."""

    def __init__(self) -> None:
        super().__init__("variant")

    def add(self, mutator: Mutator) -> None:
        if CHAIN_SEPARATOR in mutator.name or not mutator.name.strip():
            raise ValueError(
                f"variant {mutator.name!r}: a mutator name must be non-empty and free of {CHAIN_SEPARATOR!r}"
            )
        self.register(mutator.name, lambda options: mutator, mutator.description)

    def table(self) -> Mapping[str, Mutator]:
        # Registration order, not sorted: a family expands in the order its mutators were added.
        return MappingProxyType({name: entry.factory(None) for name, entry in self._entries.items()})


def builtin_mutators() -> MutatorRegistry:
    registry = MutatorRegistry()
    for mutator in BUILTIN_MUTATORS.values():
        registry.add(mutator)
    return registry


def families_of(mutators: Mapping[str, Mutator]) -> tuple[str, ...]:
    """The family names a run can select: the built-in three, then any a registered mutator brings."""
    extra = sorted({m.family for m in mutators.values()} - {"none", *FAMILIES})
    return (*FAMILIES, *extra)


def family_of(variant: str, mutators: Mapping[str, Mutator] = BUILTIN_MUTATORS) -> str:
    """The family a variant name belongs to: a mutator's family, `chain`, or `data` for variants
    that only exist in a pre-expanded pack."""
    if variant in mutators:
        return mutators[variant].family
    if CHAIN_SEPARATOR in variant and all(part in mutators for part in variant.split(CHAIN_SEPARATOR)):
        return "chain"
    return "data"


def resolve_variant_names(
    requested: tuple[str, ...], mutators: Mapping[str, Mutator] = BUILTIN_MUTATORS
) -> tuple[str, ...]:
    """Expand family names into their mutators, keep chains and plain names; first mention wins."""
    names: list[str] = []
    for name in requested:
        members = [m.name for m in mutators.values() if m.family == name] if name in families_of(mutators) else [name]
        names.extend(n for n in members if n not in names)
    return tuple(names)


def mutate(variant: str, text: str, key: str, mutators: Mapping[str, Mutator] = BUILTIN_MUTATORS) -> str:
    """Apply a mutator or a chain (`typo+camouflage`: typo first), each step seeded by key and step."""
    for step, name in enumerate(variant.split(CHAIN_SEPARATOR)):
        text = mutators[name].apply(text, key if step == 0 else f"{key}#{step}")
    return text


def _known(name: str, mutators: Mapping[str, Mutator]) -> bool:
    return name in mutators or (
        CHAIN_SEPARATOR in name and all(part in mutators and part != "original" for part in name.split(CHAIN_SEPARATOR))
    )


class VariantError(UsageError):
    """A requested variant is neither a mutator nor present in the data."""


def expand(
    items: list[PackItem],
    selected: tuple[str, ...],
    samples: int = 1,
    mutators: Mapping[str, Mutator] = BUILTIN_MUTATORS,
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
            f"--guardbench-exclude-variants: {','.join(excluded)} leaves nothing of --guardbench-variants={','.join(requested)} to run"
        )
    for item in items:
        # A misspelt pre-expanded variant would otherwise drop its items without a word.
        if item.variant != "original" and item.variant not in selected and not _known(item.variant, mutators):
            raise VariantError(
                f"{item.source_file}: {item.location} (id {item.item_id!r}): metadata.variant {item.variant!r} is not a known variant; "
                f"fix the name, or run it by naming it in --guardbench-variants; known: {', '.join(sorted(mutators))}"
            )
    shipped = {(item.pack, item.base_prompt_id, item.variant) for item in items}
    cases: list[Case] = []
    for item in items:
        if item.variant != "original":
            if item.variant in selected:
                cases.extend(_samples(item, item.variant, item.prompt_text, samples, family_of(item.variant, mutators)))
            continue
        for name in selected:
            if not _known(name, mutators):
                continue
            if name != "original" and (item.pack, item.base_prompt_id, name) in shipped:
                continue
            key = f"{item.pack}/{item.item_id}/{name}"
            cases.extend(
                _samples(item, name, mutate(name, item.prompt_text, key, mutators), samples, family_of(name, mutators))
            )
    if items and not cases:
        carried = sorted(present - {"original"})
        files = sorted({item.source_file for item in items})
        raise VariantError(
            f"{', '.join(files)}: no case to run: every item already carries a variant ({', '.join(carried)}) and "
            f"--guardbench-variants={','.join(selected)} selects none of them; name them, e.g. --guardbench-variants={','.join(carried[:3])}"
        )
    return cases


def _samples(item: PackItem, variant: str, text: str, samples: int, family: str) -> list[Case]:
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
