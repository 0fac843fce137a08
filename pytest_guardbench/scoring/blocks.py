"""The typed blocks of a run's metrics, as summary.json writes them. `tally.RunTally` builds them
once; every writer, the gate and `compare` read their attributes. Field names are the JSON keys."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from pytest_guardbench.records import Case
from pytest_guardbench.scoring.audit_design import Design
from pytest_guardbench.scoring.audit_correction import CorrectedRun
from pytest_guardbench.scoring.policies import MetricDefinitions
from pytest_guardbench.scoring.scorecard import Scorecard
from pytest_guardbench.scoring.sweeps import GuardSweep


class Block(BaseModel):
    model_config = ConfigDict(frozen=True)


class GivenKeysBlock(BaseModel):
    """A block whose keys differ by writer (a pytest session, `merge`, `rejudge`, `import-seed`, a
    provider's own counters): it is written with the keys its writer gave, no more."""

    model_config = ConfigDict(frozen=True, extra="allow")

    @model_serializer(mode="wrap")
    def _given_keys_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        given = self.model_fields_set | set(self.model_extra or ())
        return {key: value for key, value in handler(self).items() if key in given}


class CountRate(Block):
    """A count and its share of a whole (None when the whole is empty)."""

    count: int
    rate: float | None


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
        if isinstance(data, dict) and "truncated_responses" in data and "truncated_share" not in data:
            data = {**data, "truncated_share": {"tutor": data["truncated_responses"]}}
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

    @property
    def policy(self) -> str:
        return self.metric_definitions.policy


class Confidence(Block):
    """Whether the judge agreed well enough with human labels for the scorecard to be trusted."""

    level: Literal["low", "normal"]
    reason: str


Interval = tuple[float, float]


class SideRates(GivenKeysBlock):
    """A judge against human safety labels over some rows: agreement, over-blocking (safe replies
    called unsafe), misses (unsafe replies called safe) and malformed verdicts."""

    rows: int | None = None
    judged: int | None = None
    agreement: float | None = None
    over_block_rate: float | None = None
    miss_rate: float | None = None
    malformed_rate: float | None = None
    cohen_kappa: float | None = None
    min_kappa: float | None = None
    low_confidence: bool | None = None
    per_bucket: dict[str, SideRates] | None = None


class Disagreement(GivenKeysBlock):
    """One labelled reply the judge saw otherwise than the human."""

    id: str | None = None
    bucket: str | None = None
    human: str | None = None
    judge: str | None = None
    human_mode: str | None = None
    judge_mode: str | None = None
    reason: str | None = None


class StoredCheck(GivenKeysBlock):
    """Where a judge-quality result was stored, and when it was computed (the same for every run that reads it)."""

    path: str | None = None
    computed_at: str | None = None
    reused: bool | None = None


class JudgeQuality(SideRates):
    """How the run's judge agrees with human labels of replies (`judges.quality.measure_judge_quality`):
    safety, answer mode and policy label, with 95% Wilson intervals; `error` instead when it could not
    be measured. Which replies: `labels_file` (an audit file named by `guardbench_judge_check`)."""

    judge: str | None = None
    judge_id: str | None = None
    judge_identity: dict[str, Any] | None = None  # open: what makes two judges the same differs by kind
    labels_file: str | None = None
    error: str | None = None
    safety_agreement_interval_95: Interval | None = None
    safety_confusion: dict[str, dict[str, int]] | None = None
    policy_changing_confusions: dict[str, Any] | None = None
    answer_mode_agreement: float | None = None
    answer_mode_agreement_interval_95: Interval | None = None
    answer_mode_rows: int | None = None
    answer_mode_confusion: dict[str, dict[str, int]] | None = None
    policy_label_agreement: float | None = None
    policy_label_agreement_interval_95: Interval | None = None
    policy_label_rows: int | None = None
    miss_rate_interval_95: Interval | None = None
    over_block_rate_interval_95: Interval | None = None
    member_disagreement: dict[str, float] | None = None
    members: dict[str, SideRates] | None = None
    disagreements: list[Disagreement] | None = None
    stored_check: StoredCheck | None = None


class CacheCounts(GivenKeysBlock):
    """The response cache's hits, misses and writes."""

    hits: int = 0
    misses: int = 0
    writes: int = 0


class ApiCalls(GivenKeysBlock):
    """One role's API model: calls, retries and rate limits (a provider of a plugin may add counters)."""

    calls: int | None = None
    retries: int | None = None
    rate_limited: int | None = None
    lowest_concurrency: int | None = None
    structured_output_rejected: int | None = None
    circuit_breaker: dict[str, Any] | None = None
    endpoints: dict[str, dict[str, Any]] | None = None


class ResumeFacts(GivenKeysBlock):
    """Where a resumed run took its finished cases from."""

    run_dir: str | None = None
    finished_before: int | None = None
    unreadable_lines: int | None = None
    changed_cases: int | None = None
    changed_case_ids: list[str] | None = None


class Execution(GivenKeysBlock):
    """How the run was executed, added up over its processes: cases run and reused, the response
    cache, each role's API calls, where the judge check came from, and a resume's source."""

    cases_run: int | None = None
    cases_reused: int | None = None
    case_errors: int | None = None
    cache: CacheCounts | None = None
    api_calls: dict[str, ApiCalls] | None = None
    judge_check: StoredCheck | None = None
    resume: ResumeFacts | None = None


class LabelUse(Block):
    """What became of a labels file's rows on this run."""

    labels_file: str
    design: Design
    rows: int
    used: int
    reply_changed: int  # the run's reply differs from the labelled one
    not_in_run: int  # no scored single-reply case of this run has the row's id
    undecided: int  # the row's labels cannot decide the case under the run's policy


class Correction(Block):
    """summary.json's `corrected` block: the labels used and the corrected scorecards; a run with
    conversations also has its conversations' replies corrected as replies, per depth."""

    labels: LabelUse
    scorecards: CorrectedRun
    conversation_replies: CorrectedRun | None = None
