"""One case on its way through the pipeline's stages (`Draft`), the router that decides whether the
tutor answers after the guard, and the record a finished draft becomes."""

from __future__ import annotations

from dataclasses import dataclass, field

from pytest_guardbench.records import (
    Case,
    CaseRecord,
    Completion,
    GuardDecision,
    JudgeVerdict,
    PipelineError,
    TurnRecord,
    TutorReply,
)
from pytest_guardbench.run.conversation import conversation_verdict, scripted, turn_label
from pytest_guardbench.run.stages import Stack
from pytest_guardbench.scoring.conversation_tally import first_unsafe_depth
from pytest_guardbench.settings.config import MalformedPolicy


def routes_to_tutor(decision: GuardDecision | None, policy: MalformedPolicy) -> bool:
    if decision is None or decision.status == "allow":
        return True
    if decision.status == "block":
        return False
    return policy in ("allow", "fallback")


@dataclass
class Draft:
    """One case on its way through the stages: each stage fills its field (guard, response, verdict)
    or sets `error` and ends it; `record_from_draft` turns a finished draft into the case's record."""

    case: Case
    guard: GuardDecision | None = None
    response: TutorReply | None = None
    tutor_ran: bool = False
    error: PipelineError | None = None
    verdict: JudgeVerdict | None = None
    timings: dict[str, float] | None = None
    missed_cache: bool = False  # a call of the stage it stopped at was not cached (cache-only walk)
    # A conversation: the turns finished so far, the script index of the live user turn now being
    # answered and its depth, and whether the conversation has ended (then `verdict` is the whole
    # conversation's). A single prompt keeps the defaults and never looks at them.
    done: list[TurnRecord] = field(default_factory=list)
    position: int = -1
    depth: int = 1
    over: bool = False
    # An attack conversation: the live turn as the attacker wrote it, and the attacker's answer.
    written: str | None = None
    attacker_call: Completion | None = None

    def __post_init__(self) -> None:
        if not self.case.is_conversation or self.position >= 0:
            return
        live = self.case.live_positions()
        if not live:
            self.error = PipelineError(stage="guard", message="the conversation has no user turn to answer")
            return
        self.position = live[0]
        self.done = scripted(self.case, 0, live[0], depth=1)

    @property
    def user_text(self) -> str:
        """The user turn being answered: the prompt, or a conversation's current live turn."""
        if not self.case.is_conversation:
            return self.case.prompt_text
        return (self.written or "") if self.attacker_writes else self.case.turns[self.position].content

    @property
    def attacker_writes(self) -> bool:
        """The live turn is an attacker's placeholder (its content is the goal, not the text sent)."""
        return self.case.is_conversation and self.position >= 0 and self.case.turns[self.position].source == "attacker"

    @property
    def awaits_attacker(self) -> bool:
        return self.attacker_writes and self.written is None and not self.over

    def time(self, stage: str, seconds: float) -> None:
        # Summed over a conversation's turns; a single prompt runs each stage once.
        timings = self.timings or {}
        self.timings = {**timings, stage: round(timings.get(stage, 0.0) + seconds, 6)}

    @property
    def stopped(self) -> bool:
        return self.error is not None or self.missed_cache

    def pending_turns(self) -> list[TurnRecord]:
        """The current exchange as records, before it is closed: the user turn with the guard's
        verdict, and the reply with the judge's when there is one."""
        if not self.case.is_conversation or self.over or self.position < 0 or self.awaits_attacker:
            return []
        turn = self.case.turns[self.position]
        user = TurnRecord(
            role="user",
            content=self.user_text,
            source=turn.source,
            depth=self.depth,
            is_harmful=turn_label(self.case, turn),
            guard=self.guard,
            attacker=self.attacker_call,
        )
        if self.response is None:
            return [user]
        reply = TurnRecord(
            role="assistant",
            content=self.response.text,
            source=self.response.source,
            depth=self.depth,
            reply=self.response,
            judge=self.verdict,
        )
        return [user, reply]

    def close_turn(self, stack: Stack) -> None:
        """After the current live turn: record it, then go on to the next live turn, or end the
        conversation when the guard blocked (the refusal ends it) or the script has no turn left. An
        attack also ends when a reply is judged unsafe: the attacker reached its goal."""
        self.done.extend(self.pending_turns())
        later = [i for i in self.case.live_positions() if i > self.position]
        blocked = self.guard is not None and not routes_to_tutor(self.guard, stack.malformed_policy)
        reached = self.attacker_writes and self.verdict is not None and self.verdict.response_safety == "unsafe"
        if blocked or reached or not later:
            self.over = True
            if not stack.guard_only:
                self.verdict = conversation_verdict(self.done, stack.judge.name)
                if self.verdict is None:
                    self.error = PipelineError(stage="judge", message="no reply of the conversation was judged")
            return
        self.done.extend(scripted(self.case, self.position + 1, later[0], depth=self.depth + 1))
        self.position, self.depth = later[0], self.depth + 1
        self.guard = self.response = self.verdict = None
        self.written, self.attacker_call = None, None


def record_from_draft(draft: Draft) -> CaseRecord:
    """The record a draft ends as, redacted: what results.jsonl, the reports and the terminal see. A
    conversation keeps every turn; its `guard` and `response` are those of the last turn it reached."""
    turns = [*draft.done, *draft.pending_turns()] if draft.case.is_conversation else []
    return CaseRecord.for_case(
        draft.case,
        guard=draft.guard,
        tutor_ran=draft.tutor_ran,
        response=draft.response,
        judge=draft.verdict if draft.error is None else None,
        error=draft.error,
        timings_s=draft.timings or {},
        turns=tuple(turns),
        first_unsafe_turn=first_unsafe_depth(turns),
    ).redacted()
