"""Stage timings, and the tokens and cost of the tutor's and attacker's answers, over a run's
records: the `usage` block of summary.json. Pure; part of `tally.RunTally`'s one pass."""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field

from pytest_guardbench.records import CaseRecord
from pytest_guardbench.document.metrics import StageTiming, TutorTokens, Usage
from pytest_guardbench.scoring.sweeps import percentile

STAGES = ("guard", "tutor", "judge")


@dataclass
class UsageTally:
    """Stage timings and the tokens of the tutor's and attacker's answers, fed one record at a time
    (`add`), read once (`usage`)."""

    seconds: dict[str, array[float]] = field(default_factory=lambda: {s: array("d") for s in STAGES})
    answers: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    completion_counted: int = 0
    tokens_missing: bool = False
    tokens_by_model: dict[str, list[int]] = field(default_factory=dict)  # model -> [prompt, completion]
    attacker: _Tokens = field(default_factory=lambda: _Tokens())

    def add(self, record: CaseRecord) -> None:
        usage = self
        if "attacker" in record.timings_s:  # only runs with attack conversations show the stage
            usage.seconds.setdefault("attacker", array("d"))
        for stage, seconds in usage.seconds.items():
            if stage in record.timings_s:
                seconds.append(record.timings_s[stage])
        for turn in record.turns:
            if turn.attacker is not None:
                call = turn.attacker
                usage.attacker.add(call.model, call.prompt_tokens, call.completion_tokens)
        # Every tutor call is paid for, each turn of a conversation too; a refusal text costs nothing.
        for reply in record.tutor_replies():
            usage.answers += 1
            tokens = usage.tokens_by_model.setdefault(reply.model, [0, 0])
            if reply.prompt_tokens is None:
                usage.tokens_missing = True
            else:
                usage.prompt_tokens += reply.prompt_tokens
                tokens[0] += reply.prompt_tokens
            if reply.completion_tokens is None:
                usage.tokens_missing = True
            else:
                usage.completion_tokens += reply.completion_tokens
                usage.completion_counted += 1
                tokens[1] += reply.completion_tokens

    def usage(self, prices: Mapping[str, Mapping[str, float]]) -> Usage:
        """Per-stage time (p50/p95 of each case's share of its batch or call) and the tutor's tokens and
        cost. Cost needs a price for every model that answered and token counts on every answer;
        otherwise it is None (unknown), never 0."""
        u = self
        stages = {
            stage: StageTiming(
                cases=len(s), p50_s=percentile(s, 0.5), p95_s=percentile(s, 0.95), total_s=round(math.fsum(s), 6)
            )
            for stage, s in u.seconds.items()
        }
        models = sorted(u.tokens_by_model)
        missing_price = [m for m in models if m not in prices]
        cost: float | None = None
        if u.answers and not u.tokens_missing and not missing_price:
            cost = math.fsum(
                p * prices[m].get("input_per_million", 0.0) / 1e6 + c * prices[m].get("output_per_million", 0.0) / 1e6
                for m, (p, c) in sorted(u.tokens_by_model.items())
            )
        tokens = TutorTokens(
            answers=u.answers,
            prompt_tokens=u.prompt_tokens if u.answers and not u.tokens_missing else None,
            completion_tokens=u.completion_tokens if u.answers else None,
            models=models,
        )
        note = None
        if cost is None and u.answers:
            note = f"no price for {', '.join(missing_price)}" if missing_price else "some answers carry no token counts"
        attacker = u.attacker
        attacker_tokens = (
            TutorTokens(
                answers=attacker.answers,
                prompt_tokens=None if attacker.missing else sum(p for p, _ in attacker.by_model.values()),
                completion_tokens=None if attacker.missing else sum(c for _, c in attacker.by_model.values()),
                models=sorted(attacker.by_model),
            )
            if attacker.answers
            else None
        )
        return Usage(
            stages=stages,
            tutor_tokens=tokens,
            tutor_cost_usd=None if cost is None else round(cost, 6),
            cost_note=note,
            attacker_tokens=attacker_tokens,
            attacker_cost_usd=attacker.cost(prices),
        )


@dataclass
class _Tokens:
    """Token counts of one role's answers, by model, for its cost."""

    answers: int = 0
    missing: bool = False
    by_model: dict[str, list[int]] = field(default_factory=dict)  # model -> [prompt, completion]

    def add(self, model: str, prompt: int | None, completion: int | None) -> None:
        self.answers += 1
        counts = self.by_model.setdefault(model, [0, 0])
        self.missing |= prompt is None or completion is None
        counts[0] += prompt or 0
        counts[1] += completion or 0

    def cost(self, prices: Mapping[str, Mapping[str, float]]) -> float | None:
        """USD, or None without a price for a model that used tokens (no tokens cost nothing)."""
        if not self.answers or self.missing:
            return None
        used = {m: pc for m, pc in self.by_model.items() if any(pc)}
        if any(m not in prices for m in used):
            return None
        return round(
            math.fsum(
                p * prices[m].get("input_per_million", 0.0) / 1e6 + c * prices[m].get("output_per_million", 0.0) / 1e6
                for m, (p, c) in sorted(used.items())
            ),
            6,
        )
