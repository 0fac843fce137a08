"""OpenAI's moderation endpoint (`omni-moderation-latest`, or any server answering `/moderations`
the same way): `flagged` decides, the highest category score is P(risk), and the flagged
categories are kept on the decision. The endpoint judges content for everyone, not for children:
its categories have no "asks for alcohol" or "swear words", which a child-safety run should know."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from pytest_guardbench.records import GuardDecision


class ModerationModel(Protocol):
    model: str

    def moderate(self, texts: Sequence[str]) -> list[object]: ...


def parse_moderation(raw: str, guard: str) -> GuardDecision:
    """One moderation result: `flagged` a boolean, `category_scores` numbers in [0, 1] and
    `categories` booleans; anything else (a body without exactly one result included) is malformed."""
    result = json.loads(raw)
    if not isinstance(result, dict) or "malformed_body" in result:
        return GuardDecision(
            guard=guard, status="malformed", reason="the body has no single moderation result", raw=raw
        )
    flagged, scores, categories = result.get("flagged"), result.get("category_scores"), result.get("categories")
    if not isinstance(flagged, bool):
        return GuardDecision(guard=guard, status="malformed", reason="'flagged' is not true or false", raw=raw)
    if (
        not isinstance(scores, dict)
        or not scores
        or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and 0.0 <= v <= 1.0 and not math.isnan(v)
            for v in scores.values()
        )
    ):
        return GuardDecision(
            guard=guard, status="malformed", reason="'category_scores' are not scores in [0, 1]", raw=raw
        )
    if not isinstance(categories, dict) or not all(isinstance(v, bool) for v in categories.values()):
        return GuardDecision(guard=guard, status="malformed", reason="'categories' are not true/false flags", raw=raw)
    named = tuple(sorted(name for name, hit in categories.items() if hit))
    top = max(scores, key=lambda name: scores[name])
    return GuardDecision(
        guard=guard,
        status="block" if flagged else "allow",
        reason=f"flagged: {', '.join(named) or 'no category'}"
        if flagged
        else f"not flagged (highest {top} {scores[top]:.3f})",
        raw=raw,
        score=float(scores[top]),
        categories=named,
        risks={name: float(value) for name, value in sorted(scores.items())},
    )


@dataclass(frozen=True)
class ModerationAdapter:
    model: ModerationModel
    name: str = "openai-moderation"
    description: str = "OpenAI moderation endpoint: flagged decides, P(risk) = the highest category score."

    def screen(self, prompts: Sequence[str]) -> list[str]:
        return [json.dumps(result, sort_keys=True) for result in self.model.moderate(prompts)]

    def parse(self, raw: str) -> GuardDecision:
        return parse_moderation(raw, self.name)
