"""Boundary records shared across layers.

`CaseRecord` is the wire format: workers attach it to their test reports and the controller
rebuilds it with `CaseRecord.model_validate`. Everything here is plain JSON once dumped.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from pytest_guardbench._util.json_text import sorted_json
from pytest_guardbench._util.redact import current_redactor, redact, redacted_fields

SCHEMA_VERSION = 1

GuardStatus = Literal["allow", "block", "malformed"]
ResponseSafety = Literal["safe", "unsafe"]
AnswerMode = Literal["answered", "refused_or_blocked", "indirect", "non_answer"]
ANSWER_MODES: tuple[str, ...] = ("answered", "refused_or_blocked", "indirect", "non_answer")
PolicyLabel = Literal["correct", "incorrect"]
PolicyName = Literal["assistant_policy_v2", "refusal"]  # scoring policies; see policies.py
ResponseSource = Literal["tutor", "guard_block"]
Outcome = Literal["TP", "FP", "TN", "FN"]
LabelSource = Literal["is_harmful", "label", "category_rule", "unlabelled"]
PipelineStage = Literal["guard", "tutor", "judge", "attacker"]
TurnRole = Literal["user", "assistant"]
# Who wrote a turn: the pack (a scripted user turn or a fixed assistant turn), a variant that built
# the conversation, the attacker model, the tutor, or the guard's refusal text.
TurnSource = Literal["pack", "variant", "attacker", "tutor", "guard_block"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Turn(_Frozen):
    """One scripted turn of a conversation: a user turn, or a fixed assistant turn that primes the
    context (the tutor never wrote it). `is_harmful` is a user turn's own label, when the data gives one.
    A user turn whose source is `attacker` is a placeholder: the attacker writes it when the run reaches
    it, toward the goal its `content` states (`cases/attack.py`)."""

    role: TurnRole
    content: str
    is_harmful: bool | None = None
    source: TurnSource = "pack"


class PackItem(_Frozen):
    """One validated prompt from a pack, dataset or CSV file, before variant expansion."""

    pack: str
    item_id: str
    prompt_text: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    source_file: str
    location: str  # "item 3" for JSON packs, "line 7" for JSONL and CSV
    is_harmful: bool | None
    label_source: LabelSource
    category: str | None
    variant: str
    base_prompt_id: str
    # A conversation item's script, ending with a user turn whose text is `prompt_text`; empty for a single prompt.
    turns: tuple[Turn, ...] = ()


class Case(_Frozen):
    """One prompt-variant sample: the unit that becomes one pytest test."""

    case_id: str
    pack: str
    item_id: str
    base_prompt_id: str
    variant: str
    sample_index: int = 0
    prompt_text: str
    is_harmful: bool | None
    label_source: LabelSource
    category: str | None
    source_file: str
    variant_family: str | None = None  # the mutator family (or chain, data), set when the case is made
    # A conversation's script (user turns and fixed assistant turns), ending with the user turn whose
    # text is `prompt_text`; empty for a single prompt.
    turns: tuple[Turn, ...] = ()

    @property
    def is_conversation(self) -> bool:
        return bool(self.turns)

    def live_positions(self) -> tuple[int, ...]:
        """Indexes of the user turns the system answers: those not followed by a fixed assistant turn
        (a user turn the pack answered itself is context)."""
        turns = self.turns
        return tuple(
            i
            for i, turn in enumerate(turns)
            if turn.role == "user" and (i + 1 == len(turns) or turns[i + 1].role != "assistant")
        )


# A validation context key: the redactor a reader took once for a whole record
# (`CaseRecord.parse_json`), so that its texts do not each look the environment up again.
REDACTOR_CONTEXT = "guardbench_redactor"


def _redact_text(value: str, info: ValidationInfo) -> str:
    if not value:
        return value
    context = info.context
    clean = context.get(REDACTOR_CONTEXT) if context else None
    return clean(value) if clean is not None else redact(value)


class GuardDecision(_Frozen):
    """Parsed guardrail verdict; `raw` keeps what the guard said so a reviewer can check the parse."""

    guard: str
    status: GuardStatus
    reason: str
    raw: str
    score: float | None = None  # P(risk) when the guard gives one, kept for threshold sweeps
    categories: tuple[str, ...] = ()
    risks: dict[str, float | None] = Field(default_factory=dict)  # per-risk P(risk) for multi-risk guards
    # The guard model's output stopped at its token limit; None where the output has no finish reason
    # (a classifier, a trained head).
    cut_off: bool | None = None

    _no_secrets = field_validator("reason", "raw")(_redact_text)


class Completion(_Frozen):
    """What a model said to one conversation, and the facts of the call."""

    text: str
    model: str
    finish_reason: str | None = None
    completion_tokens: int | None = None
    prompt_tokens: int | None = None
    latency_s: float | None = None


class TutorReply(Completion):
    """The final response shown to the child: a tutor's completion, or the guard's refusal text."""

    source: ResponseSource


def _renamed_answer_mode(value: Any) -> Any:
    # Runs written before assistant_policy_v2 called an indirect answer "redirected".
    return "indirect" if value == "redirected" else value


class JudgeVerdict(_Frozen):
    """Labels of one final response. Our judges give malformed verdicts no labels; an imported run
    may flag a verdict malformed and still carry the labels its own scoring used."""

    judge: str
    response_safety: ResponseSafety | None
    answer_mode: AnswerMode | None
    reason: str
    malformed: bool = False
    raw: str = ""
    assistant_policy_label: PolicyLabel | None = None  # the judge's own correct/incorrect, when it gives one
    # A panel's or a sampled judge's verdict keeps the verdicts it was the majority of (empty otherwise).
    members: tuple[JudgeVerdict, ...] = ()
    # The judge model's reply stopped at its token limit; None where the reply has no finish reason
    # (the rules and offline judges).
    cut_off: bool | None = None

    _old_mode = field_validator("answer_mode", mode="before")(_renamed_answer_mode)
    # Redacted as it is made: a verdict's words reach more than the record (a judge check's
    # disagreements in summary.json, `judge-quality --json`), and a judge may quote a key it was shown.
    _no_secrets = field_validator("reason", "raw")(_redact_text)

    @classmethod
    def unusable(cls, judge: str, reason: str, **facts: Any) -> JudgeVerdict:
        """A verdict with no labels: the judge's output could not be used (or no majority was found)."""
        return cls(judge=judge, response_safety=None, answer_mode=None, reason=reason, malformed=True, **facts)


class PipelineError(_Frozen):
    """A stage that failed; the case is then neither safe nor unsafe. The message is redacted: it
    reaches results.jsonl, the reports, JUnit XML and the terminal, and servers quote keys back."""

    stage: PipelineStage
    message: str

    _no_secrets = field_validator("message")(_redact_text)


class TurnRecord(_Frozen):
    """One turn of a conversation as it ran. A user turn carries the guard's verdict on the
    conversation up to it; an assistant turn the reply (tutor or refusal; none for a fixed turn)
    and the judge's verdict on it in context. `depth` counts user turns from 1."""

    role: TurnRole
    content: str
    source: TurnSource
    depth: int
    is_harmful: bool | None = None  # a user turn's label: its own, or the conversation's
    guard: GuardDecision | None = None
    reply: TutorReply | None = None
    judge: JudgeVerdict | None = None
    # A user turn the attacker wrote: the attacker's answer as it came (text before clean-up, model, tokens).
    attacker: Completion | None = None


# Fields that name things rather than say them: ids made from the data, names of units and models,
# closed labels. A redaction that matched inside one (an id that looks like `sk-…`) would break the
# joins across runs that use it, and none of them holds a model's or a server's words.
IDENTIFIER_FIELDS = frozenset(
    {
        "case_id",
        "pack",
        "item_id",
        "base_prompt_id",
        "variant",
        "variant_family",
        "category",
        "judge_id",
        "model",
        "guard",
        "judge",
    }
)


class CaseRecord(_Frozen):
    """Everything known about one case after the pipeline ran (one line of results.jsonl)."""

    schema_version: int = SCHEMA_VERSION
    case_id: str
    pack: str
    item_id: str
    base_prompt_id: str
    variant: str
    sample_index: int
    category: str | None
    is_harmful: bool | None
    label_source: LabelSource
    variant_family: str | None = None  # None in runs recorded before it was kept: the finish fills it in
    prompt_text: str
    guard: GuardDecision | None
    tutor_ran: bool
    response: TutorReply | None
    judge: JudgeVerdict | None
    # The identity (`run.judge_check.judge_id`) of the judge that gave `judge`; None without a verdict
    # and in results recorded before it was kept.
    judge_id: str | None = None
    error: PipelineError | None = None
    timings_s: dict[str, float] = Field(default_factory=dict)
    # A conversation: every turn as it ran (empty for a single prompt). `guard`, `response` and
    # `judge` above are then its last user turn's verdict, its last reply and the whole
    # conversation's verdict; `first_unsafe_turn` is the depth of the first reply judged unsafe.
    turns: tuple[TurnRecord, ...] = ()
    first_unsafe_turn: int | None = None

    @property
    def is_conversation(self) -> bool:
        return bool(self.turns)

    def tutor_replies(self) -> list[TutorReply]:
        """Every reply the tutor wrote for this case: each turn's of a conversation, or the one reply."""
        if self.turns:
            return [t.reply for t in self.turns if t.reply is not None and t.reply.source == "tutor"]
        reply = self.response
        return [reply] if self.tutor_ran and reply is not None and reply.source == "tutor" else []

    def redacted(self) -> CaseRecord:
        """The record with every secret replaced in every text that reaches a file or the terminal: the
        one pass every record takes when it is made (the pipeline, rejudge, merge), since a served model
        may echo a key back. It walks every text field at any depth (a conversation's turns, a panel's
        member verdicts, the attacker's answers), so a field added later is covered without a word
        here; only identifiers are left as they are (`IDENTIFIER_FIELDS`)."""
        return redacted_fields(self, current_redactor(), IDENTIFIER_FIELDS)

    @classmethod
    def parse_json(cls, line: str | bytes) -> CaseRecord:
        """A record from one line of results.jsonl, its texts redacted as they are read (a line written
        by an older version may hold a key) with one look at the environment for the whole record."""
        return cls.model_validate_json(line, context={REDACTOR_CONTEXT: current_redactor()})

    def json_line(self) -> str:
        """The record as one line of results.jsonl (keys sorted, text kept as is)."""
        return sorted_json(self.model_dump(mode="json")) + "\n"

    @classmethod
    def for_case(cls, case: Case, **fields: Any) -> CaseRecord:
        return cls(
            case_id=case.case_id,
            pack=case.pack,
            item_id=case.item_id,
            base_prompt_id=case.base_prompt_id,
            variant=case.variant,
            variant_family=case.variant_family,
            sample_index=case.sample_index,
            category=case.category,
            is_harmful=case.is_harmful,
            label_source=case.label_source,
            prompt_text=case.prompt_text,
            **fields,
        )


AuditDesign = Literal["random", "stratified", "cluster", "debug"]


class LabelDraw(_Frozen):
    """The draw an audit file's row came from (`guardbench audit` writes it on every row): the seed and
    the number of units drawn, a hash of the population drawn from (`audit.draw_record`), and the row's
    place in the draw's order. `correct` draws again from the run with them and compares."""

    seed: int
    size: int = Field(ge=1)
    population_sha256: str
    position: int = Field(ge=1)


class LabelOverlap(_Frozen):
    """A second labeller's row (`guardbench audit --overlap`): the first labeller's file whose draw it
    shares (`of`, as given, and the sha256 of its bytes when the share was drawn), the share of that
    draw given to the second labeller, the share's seed and size."""

    of: str
    of_sha256: str
    share: float = Field(gt=0.0, le=1.0)
    seed: int
    size: int = Field(ge=1)


class LabelSettlement(_Frozen):
    """A settled row (`guardbench audit --adjudicate`): the two files it settles, their labellers and
    their two (response safety, answer mode) labels, and whether they agreed (settled as agreed) or the
    adjudicator (the row's `labeller`) decided."""

    of: tuple[str, str]
    labellers: tuple[str | None, str | None]
    labels: tuple[tuple[ResponseSafety, AnswerMode | None], tuple[ResponseSafety, AnswerMode | None]]
    agreed: bool


class JudgeLabel(_Frozen):
    """One human-labelled response for checking a judge (a line of a judge-labels JSONL file)."""

    id: str
    prompt: str
    response: str
    human_label: ResponseSafety
    answer_mode: AnswerMode | None = None  # the human's answer mode, when labelled
    assistant_policy_label: PolicyLabel | None = None  # the human's correct/incorrect, when labelled
    bucket: str | None = None  # e.g. refusal, brief_condemnation, benign_education
    is_harmful: bool | None = None  # the prompt's label, shown to LLM judges as in a run
    category: str | None = None
    source: ResponseSource = "tutor"
    split: str | None = None  # train/test for sets that a judge was fitted on
    finish_reason: str | None = None  # the tutor's, as recorded (e.g. "length": the reply was cut off)
    note: str | None = None  # the labeller's free-text note; never read by a judge
    # How the row was drawn from a run (`guardbench audit --design`), so labels can correct its
    # scorecards: the design, the row's stratum and the probability that the design drew it; the
    # reply's sha256 (a label whose reply changed since is dropped); a conversation reply's turn.
    design: AuditDesign | None = None
    stratum: str | None = None
    inclusion_probability: float | None = Field(default=None, gt=0.0, le=1.0)
    reply_sha256: str | None = None
    turn: int | None = Field(default=None, ge=1)
    # Who labelled the row, by which rubric (`audit.rubric.RUBRIC_VERSION`), in which draw; a second
    # labeller's row says whose draw it overlaps, a settled row which two labellings it settles.
    rubric_version: str | None = None
    labeller: str | None = None
    draw: LabelDraw | None = None
    overlap: LabelOverlap | None = None
    adjudicated: LabelSettlement | None = None

    _old_mode = field_validator("answer_mode", mode="before")(_renamed_answer_mode)
