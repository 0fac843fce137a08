"""IBM Granite Guardian by version, on a local model or over vLLM (template kwargs travel as
`chat_template_kwargs`).

- 3.0-3.2: `guardian_config={"risk_name": ...}` (plus `risk_definition` for a custom risk); the
  answer is `Yes` or `No`, in 3.2 followed by `<confidence> High|Low </confidence>`.
- 3.3: `guardian_config={"criteria_id": ...}` for a built-in criterion or `{"custom_criteria": ...}`,
  and a `think` switch; the answer is `<score> yes|no </score>`, after a `<think>` block when
  thinking. P(risk) comes from the yes/no token mass at the verdict position in both.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pytest_guardbench.guards.base import RiskScore, first_word
from pytest_guardbench.providers.base import ClassifyRequest, Message, ScoringChatModel
from pytest_guardbench.records import GuardDecision, GuardStatus

GraniteVersion = Literal["3.0", "3.1", "3.2", "3.3"]
GRANITE_VERSIONS: tuple[str, ...] = ("3.0", "3.1", "3.2", "3.3")
SCORE_MARKER = "<score>"

_VERSION_IN_ID = re.compile(r"granite[-_.]?guardian[-_.]?(\d)[-_.](\d)", re.IGNORECASE)
_CONFIDENCE = re.compile(r"<\s*confidence\s*>\s*(high|low)\s*<\s*/\s*confidence\s*>", re.IGNORECASE)
_SCORE_TAG = re.compile(r"<\s*score\s*>\s*(\w+)\s*<\s*/\s*score\s*>", re.IGNORECASE)
_THINK = re.compile(r"<think>.*?</think>", re.IGNORECASE | re.DOTALL)


def granite_version(model_id: str, declared: str | None = None) -> GraniteVersion:
    """The declared version (alias field `granite_version`), else the one in the model id
    (`ibm-granite/granite-guardian-3.3-8b` -> 3.3), else 3.2, the built-in alias's version."""
    if declared:
        return declared  # type: ignore[return-value]
    found = _VERSION_IN_ID.search(model_id)
    if found and f"{found.group(1)}.{found.group(2)}" in GRANITE_VERSIONS:
        return f"{found.group(1)}.{found.group(2)}"  # type: ignore[return-value]
    return "3.2"


def granite_template_kwargs(
    version: str, risk: str, definition: str | None = None, think: bool = False
) -> dict[str, object]:
    """What the model's chat template takes for one risk (criterion) in this version."""
    if version == "3.3":
        config = {"custom_criteria": definition} if definition else {"criteria_id": risk}
        return {"guardian_config": config, "think": think}
    config = {"risk_name": risk, "risk_definition": definition} if definition else {"risk_name": risk}
    return {"guardian_config": config}


def parse_granite(raw: str, guard: str, risk: str = "harm", version: str = "3.2") -> GuardDecision:
    """3.0-3.2: the first word is `Yes` (block) or `No` (allow), a 3.2 `<confidence>` tag kept as
    metadata. 3.3: `<score> yes|no </score>`, after an optional *closed* `<think>` block. Anything
    else, leaked template text included, is malformed. Never a substring test."""
    if version == "3.3":
        if "<think>" in raw.lower() and "</think>" not in raw.lower():
            return GuardDecision(guard=guard, status="malformed", reason=f"{risk}: unfinished <think> block", raw=raw)
        scored = _SCORE_TAG.search(_THINK.sub("", raw))
        if scored is None:
            return GuardDecision(guard=guard, status="malformed", reason=f"{risk}: no <score> tag", raw=raw)
        word = scored.group(1)
        note = ""
    else:
        text = raw.strip()
        word = first_word(text)
        confidence = _CONFIDENCE.search(text)
        note = f" (confidence {confidence.group(1).capitalize()})" if confidence else ""
    if word.lower() == "yes":
        return GuardDecision(guard=guard, status="block", reason=f"{risk}: Yes{note}", raw=raw)
    if word.lower() == "no":
        return GuardDecision(guard=guard, status="allow", reason=f"{risk}: No{note}", raw=raw)
    return GuardDecision(guard=guard, status="malformed", reason=f"{risk}: neither Yes nor No", raw=raw)


@dataclass(frozen=True)
class GraniteGuardianAdapter:
    """Granite Guardian on the model's own chat template, one pass per risk (criterion). Any *block*
    risk answering yes blocks; *observe* risks are only recorded."""

    model: ScoringChatModel
    block_risks: tuple[str, ...] = ("harm",)
    observe_risks: tuple[str, ...] = ()
    risk_definitions: tuple[tuple[str, str], ...] = ()  # (custom risk name, definition / 3.3 custom criteria)
    name: str = "granite-guardian"
    description: str = (
        "IBM Granite Guardian 3.0-3.3 (local transformers or vLLM): yes/no per risk, P(risk) from the logits."
    )
    version: GraniteVersion = "3.2"
    think: bool = False  # 3.3 only: a reasoning trace before the score
    # "logits": one batched forward pass per risk, block when P(Yes) >= block_threshold; no text is
    # generated, so malformed output cannot be seen (bench/bench_guard_scoring.py measures the gain).
    decoding: Literal["generate", "logits"] = "generate"
    block_threshold: float = 0.5

    @property
    def max_new_tokens(self) -> int:
        # A thinking trace is long; without it 3.3 answers `<score> yes </score>` and 3.2 adds a confidence tag.
        return 512 if self.think else 12 if self.version == "3.3" else 8

    def template_kwargs(self, risk: str) -> dict[str, object]:
        return granite_template_kwargs(self.version, risk, dict(self.risk_definitions).get(risk), self.think)

    def all_template_kwargs(self) -> list[dict[str, object]]:
        """One per risk: what the preflight renders once to see the template accept it."""
        return [self.template_kwargs(risk) for risk in (*self.block_risks, *self.observe_risks)]

    def screen(self, prompts: Sequence[str]) -> list[str]:
        return self.screen_conversations([[{"role": "user", "content": p}] for p in prompts])

    def screen_conversations(self, conversations: Sequence[list[Message]]) -> list[str]:
        """The chat so far, ending with the user turn: the template judges the last user message (the
        3.2 and 3.3 templates read the turns before it as its context)."""
        return [json.dumps(r) for r in self._score(list(conversations))]

    def _score(self, conversations: list[list[Message]]) -> list[dict[str, RiskScore]]:
        results: list[dict[str, RiskScore]] = [{} for _ in conversations]
        after = SCORE_MARKER if self.version == "3.3" else ""
        for risk in (*self.block_risks, *self.observe_risks):
            kwargs = self.template_kwargs(risk)
            if self.decoding == "logits":
                probabilities = self.model.label_probabilities(  # type: ignore[attr-defined]
                    conversations, kwargs, ("Yes", "No"), after
                )
                for result, p in zip(results, probabilities, strict=True):
                    result[risk] = {"text": None, "p": p}
                continue
            request = ClassifyRequest(
                conversations, kwargs, ("Yes", "No"), max_new_tokens=self.max_new_tokens, verdict_after=after
            )
            outputs = self.model.classify(request)
            for result, output in zip(results, outputs, strict=True):
                result[risk] = {"text": output.text, "p": output.p_first}
        return results

    def _decide(self, risk: str, text: str | None, p: float | None) -> GuardDecision:
        if text is not None:
            return parse_granite(text, self.name, risk, self.version)
        if p is None:
            return GuardDecision(guard=self.name, status="malformed", reason=f"{risk}: no probability", raw="")
        status: GuardStatus = "block" if p >= self.block_threshold else "allow"
        return GuardDecision(
            guard=self.name,
            status=status,
            reason=f"{risk}: P(Yes)={p:.3f} (threshold {self.block_threshold:g})",
            raw="",
        )

    def parse(self, raw: str) -> GuardDecision:
        per_risk = json.loads(raw)
        decisions = {risk: self._decide(risk, v["text"], v["p"]) for risk, v in per_risk.items()}
        scores = {risk: v["p"] for risk, v in per_risk.items()}
        blocking = [decisions[r] for r in self.block_risks if decisions[r].status == "block"]
        malformed = [decisions[r] for r in self.block_risks if decisions[r].status == "malformed"]
        status: GuardStatus = "block" if blocking else "malformed" if malformed else "allow"
        block_scores = [scores[r] for r in self.block_risks if scores.get(r) is not None]
        reason = "; ".join(d.reason for d in decisions.values())
        return GuardDecision(
            guard=self.name,
            status=status,
            reason=reason,
            raw=raw,
            score=max(block_scores) if block_scores else None,
            risks=scores,
        )
