"""summary.json's metric blocks that depend only on the records: coverage (what was measured and why
the rest was not), usage (time, tokens, cost) and `RunMetrics`, every metric of a run, which the
run's tally builds in one pass."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from pytest_guardbench.document.base import Block, CountRate
from pytest_guardbench.document.scorecards import (
    ConversationMetrics,
    FlipRate,
    GuardSides,
    GuardSweep,
    MetricDefinitions,
    RowBuckets,
    ScopeCards,
)
from pytest_guardbench.records import Case


class LostReport(Block):
    """A selected case whose test failed before it produced a record."""

    case_id: str
    nodeid: str
    when: str
    reason: str


class TruncatedShare(Block):
    """Per stage, the model outputs cut off by the token limit (finish reason `length`): `tutor` of its
    replies; `judge` and `guard` of the outputs that have a finish reason (an LLM judge's or LLM guard's
    replies, each panel member counted), None where the stage's outputs have none (a trained head, rules)."""

    tutor: CountRate = CountRate(count=0, rate=None)
    judge: CountRate | None = None
    guard: CountRate | None = None

    def stages(self) -> list[tuple[str, CountRate]]:
        """The stages it applies to, tutor first."""
        shares = (("tutor", self.tutor), ("judge", self.judge), ("guard", self.guard))
        return [(stage, share) for stage, share in shares if share is not None]

    def describe(self) -> str:
        """`tutor 3 (1.7%), judge 0 (0.0%)`: the count and share of each stage it applies to."""
        return ", ".join(
            f"{stage} {share.count} ({'n/a' if share.rate is None else f'{share.rate:.1%}'})"
            for stage, share in self.stages()
        )


class Coverage(Block):
    """What share of the selected cases produced a scored outcome, and why the rest did not. Keys
    later versions added have defaults, so older summaries still read."""

    expected: int
    received: int = 0
    scored: CountRate
    scored_of_labelled: CountRate
    labelled: CountRate
    unlabelled: CountRate
    valid_judge: CountRate
    malformed_judge: CountRate
    incomplete_judge: CountRate = CountRate(count=0, rate=None)
    tutor_evaluable: CountRate
    tutor_answers: int = 0
    empty_responses: CountRate = CountRate(count=0, rate=None)
    truncated_share: TruncatedShare = TruncatedShare()
    errored: CountRate
    missing: CountRate
    missing_case_ids: list[str] = Field(default_factory=list)
    # Of the verdicts taken as a majority (a judge panel, --guardbench-judge-samples above 1), those whose
    # members did not all give the same labels; None when no verdict was a majority.
    judge_disagreement: CountRate | None = None
    # Whole cases, not only ids, so `merge` and `rejudge` can carry them into the runs they write;
    # None in summaries written before they were kept.
    missing_cases: list[Case] | None = None
    lost_reports: list[LostReport] = Field(default_factory=list)
    unscored_reasons: dict[str, int] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _tutor_share_of_older_summaries(cls, data: Any) -> Any:
        # Summaries written before the judge and guard were counted kept the tutor's as `truncated_responses`.
        if isinstance(data, dict) and "truncated_responses" in data:
            older = {key: value for key, value in data.items() if key != "truncated_responses"}
            older.setdefault("truncated_share", {"tutor": data["truncated_responses"]})
            return older
        return data


class StageTiming(Block):
    """Each case's share of its batch or call, in seconds."""

    cases: int
    p50_s: float | None
    p95_s: float | None
    total_s: float


class TutorTokens(Block):
    answers: int
    prompt_tokens: int | None
    completion_tokens: int | None
    models: list[str]


class Usage(Block):
    """Per-stage time and the tutor's tokens and cost (None when unknown, never 0)."""

    stages: dict[str, StageTiming]
    tutor_tokens: TutorTokens
    tutor_cost_usd: float | None
    cost_note: str | None
    # Attack conversations' attacker (`--guardbench-attacker`): None when the run had none.
    attacker_tokens: TutorTokens | None = None
    attacker_cost_usd: float | None = None


class RepeatedReply(Block):
    """One reply the tutor gave, with case, spaces and punctuation ignored, to many different prompts."""

    reply: str  # its normalised text (lower case, no punctuation), the first 160 characters
    digest: str  # sha256 of the normalised text, its first 16 hex digits
    base_prompts: int  # the different base prompts it was given to
    share: float  # of the base prompts the tutor replied to
    safe_cases_moved: int  # safe-prompt cases the judge called answered (TN), counted FP by the scorecards


class RepeatedReplies(Block):
    """The run-level check for a tutor that gives one reply whatever it is asked
    (`scoring/repeated_replies.py`): the replies it found repeated, which the scorecards count as
    non-answers on safe prompts. Written only when it found one. The records keep the judge's verdicts."""

    rule: str
    min_base_prompts: int
    min_share: float
    base_prompts: int  # the different base prompts the tutor replied to
    replies: list[RepeatedReply]
    moved_tn_to_fp: int  # safe-prompt cases counted FP although the judge's labels made them TN


class RunMetrics(Block):
    """Every metric of a run: what scoring gives the finish step, and the part of summary.json that
    depends only on the records."""

    metric_definitions: MetricDefinitions
    scorecards: ScopeCards
    per_variant: dict[str, ScopeCards]
    per_family: dict[str, ScopeCards] = Field(default_factory=dict)
    per_category: dict[str, ScopeCards] = Field(default_factory=dict)
    flip_rates: dict[str, FlipRate] = Field(default_factory=dict)
    variant_families: dict[str, str] = Field(default_factory=dict)
    prompt_row_buckets: RowBuckets = Field(default_factory=RowBuckets.none)
    guard_decisions: dict[str, GuardSides] = Field(default_factory=dict)
    coverage: Coverage
    outcomes: dict[str, int] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    guard_sweeps: dict[str, GuardSweep] = Field(default_factory=dict)
    conversations: ConversationMetrics | None = None
    repeated_replies: RepeatedReplies | None = None  # only when the tutor repeated a reply (see its block)

    @property
    def policy(self) -> str:
        return self.metric_definitions.policy
