"""The scorecards of summary.json and the blocks made of them: per scope, per variant, flip rates,
prompt-row buckets, guard decisions and sweeps, conversations by depth, and what each metric means
under the run's policy. `scoring` computes them; writers and readers use their attributes."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from pytest_guardbench.document.base import Block, CountRate


class Scorecard(BaseModel):
    """Confusion counts and the rates derived from them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n: int
    tp: int
    fp: int
    tn: int
    fn: int
    harmful_support: int
    safe_support: int
    precision: float | None
    recall: float | None
    recall_interval_95: tuple[float, float] | None = None  # Wilson
    f1: float | None
    false_positive_rate: float | None
    false_positive_rate_interval_95: tuple[float, float] | None = None  # Wilson
    false_negative_rate: float | None
    balanced_error_rate: float | None
    overall_success_rate: float | None
    harmful_prompt_success_rate: float | None
    safe_prompt_success_rate: float | None
    harmful_prompt_unsafe_answer_rate: float | None
    safe_prompt_overrefusal_rate: float | None
    harmful_unsafe_answer_count: int
    safe_overrefusal_count: int


class ScopeCards(Block):
    """`system`: final pipeline behaviour; `tutor_conditional`: only cases where the tutor actually ran."""

    system: Scorecard
    tutor_conditional: Scorecard

    def scopes(self) -> list[tuple[str, Scorecard]]:
        return [("system", self.system), ("tutor_conditional", self.tutor_conditional)]


class FlipRate(Block):
    """How often a variant's handling differs from `original` over the (base prompt, sample) pairs."""

    guard_pairs: int
    guard_flips: int
    guard_flip_rate: float | None
    outcome_pairs: int
    became_mishandled: int
    became_handled: int
    outcome_flip_rate: float | None


class RowBuckets(Block):
    """Prompt rows (pack, item, variant) by how their scored samples were handled."""

    rows: int
    fully_correct: CountRate
    partially_incorrect: CountRate
    consistently_incorrect: CountRate

    @classmethod
    def none(cls) -> RowBuckets:
        """No row counted (summaries written before the buckets were)."""
        empty = CountRate(count=0, rate=None)
        return cls(rows=0, fully_correct=empty, partially_incorrect=empty, consistently_incorrect=empty)


class GuardRates(Block):
    """One guard's decisions on the prompts of one label side."""

    n: int
    allow: CountRate
    block: CountRate
    malformed: CountRate


class GuardSides(Block):
    all: GuardRates
    harmful: GuardRates
    safe: GuardRates

    def sides(self) -> list[tuple[str, GuardRates]]:
        return [("all", self.all), ("harmful", self.harmful), ("safe", self.safe)]


class DepthRate(Block):
    """Of `n` conversations, the `count` stopped at this depth or earlier, with a 95% Wilson interval."""

    depth: int
    count: int
    n: int
    rate: float | None
    interval: tuple[float, float] | None = None


class ConversationMetrics(Block):
    """summary.json's `conversations` block; absent when a run has no conversation."""

    conversations: int
    harmful: int  # scored harmful conversations
    safe: int  # scored safe conversations
    max_depth: int
    scorecards: ScopeCards
    recall_by_turn: list[DepthRate] = Field(default_factory=list)
    over_blocking_by_turn: list[DepthRate] = Field(default_factory=list)
    # Harmful conversations by the depth of their first unsafe reply.
    first_unsafe_turn: dict[int, int] = Field(default_factory=dict)

    def at(self, table: str, depth: int) -> DepthRate | None:
        rows: list[DepthRate] = getattr(self, table)
        return next((row for row in rows if row.depth == depth), None)


class SweepPoint(BaseModel):
    """The confusion counts and rates when every score >= `threshold` is flagged."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    threshold: float
    tp: int
    fp: int
    fn: int
    tn: int
    recall: float | None
    false_positive_rate: float | None
    precision: float | None


class GuardSweep(BaseModel):
    """One guard swept over every distinct score of a run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n: int
    positives: int
    negatives: int
    roc_auc: float | None
    average_precision: float | None
    target_recall: float
    operating_point: SweepPoint | None
    operating_point_note: str | None
    curve: list[SweepPoint]


class MetricDefinitions(BaseModel):
    """What the numbers of a summary mean under its policy (summary.json's `metric_definitions`).
    Summaries written before policies existed carry none of the policy keys and were refusal-scored."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    policy: str = "refusal"
    policy_version: int | None = None
    positive: str | None = None
    harmful_prompt_correct_when: str | None = None
    safe_prompt_correct_when: str | None = None
    judge_policy_label: str | None = None
    tp_fn: str | None = None
    fp_tn: str | None = None
    recall: str | None = None
    false_positive_rate: str | None = None
    safe_prompt_overrefusal_rate: str | None = None
    harmful_prompt_unsafe_answer_rate: str | None = None
    overall_success_rate: str | None = None
    balanced_error_rate: str | None = None
    unscored: str | None = None
