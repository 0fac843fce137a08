"""Meta Llama Guard 3: `safe`, or `unsafe` and a line of S-codes; P(unsafe) from the logits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_guardbench.guards.base import classified_verdicts, parse_classified
from pytest_guardbench.providers.base import ClassifyRequest, Message, ScoringChatModel
from pytest_guardbench.records import GuardDecision

LLAMA_GUARD_CATEGORIES = tuple(f"S{n}" for n in range(1, 15))


def parse_llama_guard(raw: str, guard: str) -> GuardDecision:
    """Line 1 `safe` (and nothing after) → allow, `unsafe` → block with the comma-separated S-codes of
    line 2; unknown or missing codes keep the block but say so. Anything else is malformed."""
    lines = [line.strip() for line in raw.strip().splitlines() if line.strip()]
    if not lines:
        return GuardDecision(guard=guard, status="malformed", reason="empty output", raw=raw)
    first = lines[0].lower()
    if first == "safe":
        if len(lines) > 1:
            return GuardDecision(guard=guard, status="malformed", reason="'safe' followed by more lines", raw=raw)
        return GuardDecision(guard=guard, status="allow", reason="safe", raw=raw)
    if first != "unsafe":
        return GuardDecision(guard=guard, status="malformed", reason="first line is neither safe nor unsafe", raw=raw)
    codes = [c.strip().upper() for c in lines[1].split(",")] if len(lines) > 1 else []
    valid = tuple(c for c in codes if c in LLAMA_GUARD_CATEGORIES)
    problem = "" if codes and len(valid) == len(codes) and len(lines) <= 2 else "; categories malformed"
    return GuardDecision(
        guard=guard,
        status="block",
        reason=f"unsafe {','.join(valid) or '(no category)'}{problem}",
        raw=raw,
        categories=valid,
    )


@dataclass(frozen=True)
class LlamaGuardAdapter:
    """Llama Guard 3 on a local model: prompt classification with the model's own template,
    P(unsafe) at the first non-blank generated position."""

    model: ScoringChatModel
    name: str = "llama-guard"
    description: str = "Meta Llama Guard 3 (local transformers): safe / unsafe + S-codes, P(unsafe) from logits."

    def screen(self, prompts: Sequence[str]) -> list[str]:
        return self.screen_conversations([[{"role": "user", "content": p}] for p in prompts])

    def screen_conversations(self, conversations: Sequence[list[Message]]) -> list[str]:
        """The chat so far, alternating and ending with the user turn: the template assesses that
        last user message in the context of the whole conversation."""
        request = ClassifyRequest(list(conversations), {}, ("unsafe", "safe"), max_new_tokens=12)
        return classified_verdicts(self.model, request)

    def parse(self, raw: str) -> GuardDecision:
        return parse_classified(raw, self.name, parse_llama_guard)
