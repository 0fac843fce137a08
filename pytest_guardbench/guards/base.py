"""The allow/block decision parser every ALLOW/BLOCK guard shares, and the guard interface."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Protocol, TypedDict, runtime_checkable

from pytest_guardbench.providers.base import ClassifyRequest, ScoringChatModel
from pytest_guardbench.records import GuardDecision

# Symmetric and strict: the verdict word must stand alone (`\b`), so "Blockchain is fine" is not a
# block and "ALLOW." is an allow; anything after it must be separated by punctuation or space.
_VERDICT = re.compile(r"^\s*(ALLOW|BLOCK)\b[\s.:;,!\-–—]*(.*)$", re.IGNORECASE | re.DOTALL)


def parse_decision(raw: str, guard: str) -> GuardDecision:
    """Parse `ALLOW`/`BLOCK` (optionally with a reason) or `{"decision": "allow"|"block", ...}`."""
    text = raw.strip()
    if text.startswith("{"):
        return _parse_json_decision(text, raw, guard)
    match = _VERDICT.match(text)
    if match is None:
        return GuardDecision(guard=guard, status="malformed", reason="no ALLOW or BLOCK verdict", raw=raw)
    verdict = match.group(1).lower()
    reason = match.group(2).strip()
    # The verdict is the first word and the reason is free text: "BLOCK: Block, asks for a weapon"
    # repeats it; only a reason that opens with the other verdict contradicts it.
    repeated = re.match(r"^(ALLOW|BLOCK)\b", reason, re.IGNORECASE)
    if repeated and repeated.group(1).lower() != verdict:
        return GuardDecision(guard=guard, status="malformed", reason="contradictory verdicts", raw=raw)
    return GuardDecision(guard=guard, status="allow" if verdict == "allow" else "block", reason=reason, raw=raw)


def _parse_json_decision(text: str, raw: str, guard: str) -> GuardDecision:
    try:
        payload = json.loads(text)
    except json.JSONDecodeError:
        return GuardDecision(guard=guard, status="malformed", reason="invalid JSON verdict", raw=raw)
    decision = payload.get("decision") if isinstance(payload, dict) else None
    if not isinstance(decision, str) or decision.strip().lower() not in ("allow", "block"):
        return GuardDecision(
            guard=guard, status="malformed", reason="JSON verdict without allow/block decision", raw=raw
        )
    reason = payload.get("reason") if isinstance(payload.get("reason"), str) else ""
    return GuardDecision(guard=guard, status=decision.strip().lower(), reason=reason, raw=raw)  # type: ignore[arg-type]


@runtime_checkable
class Guard(Protocol):
    """Screens user prompts. `screen` returns one raw verdict text per prompt, in order."""

    # Read-only, so a frozen dataclass or a class attribute satisfies them.
    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    def screen(self, prompts: Sequence[str]) -> list[str]: ...

    def parse(self, raw: str) -> GuardDecision: ...


# -- raw verdicts shared by the offline guards ---------------------------------------------------------
NOT_SCREENED = "NOT SCREENED: "
_SCORE = re.compile(r"P\(risk\)=([0-9.]+)")
_FIRST_WORD = re.compile(r"^\W*?(\w+)", re.UNICODE)


def scored_verdict(p_risk: float, threshold: float) -> str:
    return f"{'BLOCK' if p_risk >= threshold else 'ALLOW'}: P(risk)={p_risk:.4f}"


def parse_offline_verdict(raw: str, guard: str) -> GuardDecision:
    """A verdict an offline guard wrote: `NOT SCREENED: <why>` (malformed, with the reason) or an
    ALLOW/BLOCK line, with its `P(risk)=` as the score when it has one."""
    if raw.startswith(NOT_SCREENED):
        return GuardDecision(guard=guard, status="malformed", reason=raw.removeprefix(NOT_SCREENED), raw=raw)
    decision = parse_decision(raw, guard)
    found = _SCORE.search(raw)
    return decision.model_copy(update={"score": float(found.group(1))}) if found else decision


def first_word(text: str) -> str:
    """The first word of a model's answer, lower-cased ("" when there is none): for guards whose
    verdict is a leading Yes/No; never a substring test."""
    found = _FIRST_WORD.match(text.strip())
    return found.group(1).lower() if found else ""


# -- raw verdicts of the classifier guards with one verdict per prompt (WildGuard, Llama Guard, Nemotron) --
def classified_verdicts(model: ScoringChatModel, request: ClassifyRequest) -> list[str]:
    """One raw verdict per conversation of `request`: the model's text and P(first label word), as
    the JSON that `parse_classified` reads back."""
    return [json.dumps({"text": o.text, "p": o.p_first}) for o in model.classify(request)]


def parse_classified(raw: str, guard: str, parse: Callable[[str, str], GuardDecision]) -> GuardDecision:
    """A raw verdict `classified_verdicts` wrote: the family's `parse` of the model's text, scored
    with the probability beside it."""
    payload = json.loads(raw)
    return parse(payload["text"], guard).model_copy(update={"score": payload["p"]})


class RiskScore(TypedDict):
    """A scoring guard's answer for one risk or policy, as its raw output holds it: the text it generated
    (None when only the label probability was read) and P(first label)."""

    text: str | None
    p: float | None
