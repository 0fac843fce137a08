"""The offline keyword guard: the child-safety lexicon, after leetspeak and typo normalisation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_guardbench.guards.base import NOT_SCREENED, parse_offline_verdict
from pytest_guardbench._util.lexicon import find_terms, too_long
from pytest_guardbench.records import GuardDecision


@dataclass(frozen=True)
class KeywordGuard:
    """Blocks prompts that contain a child-safety lexicon phrase, after leetspeak/typo normalisation."""

    name: str = "keyword"
    description: str = "Offline child-safety lexicon guard with leetspeak, spacing and typo normalisation."

    def screen(self, prompts: Sequence[str]) -> list[str]:
        verdicts = []
        for prompt in prompts:
            overlong = too_long(prompt)
            if overlong:
                verdicts.append(f"{NOT_SCREENED}{overlong}")
                continue
            hits = find_terms(prompt)
            if hits:
                first = hits[0]
                verdicts.append(f"BLOCK: {first.category} ({first.term})")
            else:
                verdicts.append("ALLOW")
        return verdicts

    def parse(self, raw: str) -> GuardDecision:
        return parse_offline_verdict(raw, self.name)
