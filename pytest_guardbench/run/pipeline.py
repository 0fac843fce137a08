"""The stages of one case: guard → decision parser → router → tutor (or refusal text) → judge; in an
attack conversation the attacker writes each user turn first.

Each stage function takes a batch of drafts and never raises for a model failure: a failing stage
becomes `Draft.error` and then `CaseRecord.error`, which is scored as neither safe nor unsafe.
`engine.Engine` decides which drafts run together and when.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import Literal

from pytest_guardbench.errors import InternalError
from pytest_guardbench.run.draft import Draft, routes_to_tutor
from pytest_guardbench.run.stages import Stack
from pytest_guardbench.guards import Guard
from pytest_guardbench.judges.base import Judge, JudgeInput
from pytest_guardbench.providers.base import CacheMiss, ChatProvider, Message
from pytest_guardbench.records import (
    PipelineError,
    PipelineStage,
    Turn,
    TutorReply,
)
from pytest_guardbench.run.attacker import Attacker, AttackRequest, written_turn
from pytest_guardbench.run.conversation import (
    alternating,
    as_messages,
    guard_window,
    turn_label,
)


def case_seed(case_id: str) -> int:
    return int.from_bytes(hashlib.sha256(case_id.encode("utf-8")).digest()[:4], "big")


def _in_batch_or_alone(drafts: list[Draft], stage: PipelineStage, run: Callable[[list[Draft]], None]) -> None:
    """Run a stage on the whole batch; if that fails, on each case alone, so one bad case (or one
    failed call) becomes one error record instead of taking the batch with it."""
    try:
        run(drafts)
        return
    except Exception as exc:  # noqa: BLE001 - isolated below
        if len(drafts) == 1:
            _fail(drafts[0], stage, exc)
            return
    for d in drafts:
        try:
            run([d])
        except Exception as exc:  # noqa: BLE001
            _fail(d, stage, exc)


def _fail(draft: Draft, stage: PipelineStage, exc: Exception) -> None:
    if isinstance(exc, CacheMiss):
        draft.missed_cache = True
        return
    draft.error = PipelineError(stage=stage, message=f"{type(exc).__name__}: {exc}")


def attacker_stage(drafts: list[Draft], stack: Stack, attacker: Callable[[], Attacker] | None) -> None:
    """Write the live user turn of each attack conversation from its goal and the turns so far."""
    try:
        if attacker is None:
            raise InternalError("the case is an attack conversation but the run has no --guardbench-attacker")
        writer = attacker()
    except Exception as exc:  # noqa: BLE001
        for d in drafts:
            d.error = PipelineError(stage="attacker", message=f"could not load attacker: {type(exc).__name__}: {exc}")
        return
    _in_batch_or_alone(drafts, "attacker", lambda batch: _write(writer, batch))


def attacker_seed(case_id: str, depth: int) -> int:
    """The attacker samples each turn with a seed of its own, stable across runs."""
    return case_seed(f"{case_id}#attacker#{depth}")


def _write(attacker: Attacker, drafts: list[Draft]) -> None:
    requests = [
        AttackRequest(
            case_id=d.case.case_id,
            goal=d.case.turns[d.position].content,
            history=tuple(Turn(role=t.role, content=t.content, source=t.source) for t in d.done),
            depth=d.depth,
            max_turns=sum(t.source == "attacker" for t in d.case.turns),
            seed=attacker_seed(d.case.case_id, d.depth),
        )
        for d in drafts
    ]
    started = time.perf_counter()
    completions = attacker.write(requests)
    if len(completions) != len(drafts):
        raise InternalError(f"attacker returned {len(completions)} turns for {len(drafts)} requests")
    share = (time.perf_counter() - started) / len(drafts)
    for d, completion in zip(drafts, completions, strict=True):
        d.time("attacker", share)
        text = written_turn(completion.text)
        if not text:
            said = " ".join(completion.text.split())[:200]
            d.error = PipelineError(stage="attacker", message=f"the attacker wrote no message (it said {said!r})")
            continue
        d.written, d.attacker_call = text, completion


def guard_stage(drafts: list[Draft], stack: Stack) -> None:
    guard = stack.guard
    if guard is None:
        return

    def run(batch: list[Draft]) -> None:
        started = time.perf_counter()
        decisions = [guard.parse(r) for r in _screen(guard, batch)]
        share = (time.perf_counter() - started) / len(batch)
        for d, decision in zip(batch, decisions, strict=True):
            d.guard = decision
            d.time("guard", share)

    _in_batch_or_alone(drafts, "guard", run)
    if stack.guard_only:
        for d in drafts:
            if d.case.is_conversation and d.guard is not None and not d.stopped:
                d.close_turn(stack)


def _screen(guard: Guard, drafts: list[Draft]) -> list[str]:
    """One raw verdict per draft. A conversation goes to a guard that reads chats as the chat so far
    (`screen_conversations`, e.g. Llama Guard 3); to any other guard as its newest user turns."""
    reads_chats = callable(getattr(guard, "screen_conversations", None))
    as_chat = [i for i, d in enumerate(drafts) if d.case.is_conversation and reads_chats]
    as_text = [i for i in range(len(drafts)) if i not in set(as_chat)]
    raw: list[str] = [""] * len(drafts)

    def screen_chats() -> list[str]:
        return guard.screen_conversations([_chat_so_far(drafts[i]) for i in as_chat])  # type: ignore[attr-defined]

    for indexes, answer in (
        (as_text, lambda: guard.screen([_guard_text(drafts[i]) for i in as_text])),
        (as_chat, screen_chats),
    ):
        if not indexes:
            continue
        said = answer()
        if len(said) != len(indexes):
            raise InternalError(f"guard returned {len(said)} verdicts for {len(indexes)} prompts")
        for i, text in zip(indexes, said, strict=True):
            raw[i] = text
    return raw


def _guard_text(draft: Draft) -> str:
    return guard_window(draft.done, draft.user_text) if draft.case.is_conversation else draft.case.prompt_text


def _chat_so_far(draft: Draft) -> list[Message]:
    return alternating([*as_messages(draft.done), {"role": "user", "content": draft.user_text}])


def tutor_stage(drafts: list[Draft], stack: Stack, tutor: Callable[[], ChatProvider]) -> None:
    """Generate for drafts the guard let through (routing happens before a draft gets here)."""
    try:
        provider = tutor()
    except Exception as exc:  # noqa: BLE001
        for d in drafts:
            d.error = PipelineError(stage="tutor", message=f"could not load tutor: {type(exc).__name__}: {exc}")
        return
    _in_batch_or_alone(drafts, "tutor", lambda batch: _generate(provider, batch, stack))


def refuse(draft: Draft, stack: Stack) -> None:
    """The final response of a case the guard stopped: the configured refusal text."""
    draft.response = TutorReply(
        text=stack.refusal_text, source="guard_block", model=draft.guard.guard if draft.guard else ""
    )


def _generate(tutor: ChatProvider, drafts: list[Draft], stack: Stack) -> None:
    # An empty system prompt (`--guardbench-system-prompt=none`) sends no system message, not an empty one.
    system: list[Message] = [{"role": "system", "content": stack.system_prompt}] if stack.system_prompt else []
    conversations: list[list[Message]] = [
        [*system, *as_messages(d.done), {"role": "user", "content": d.user_text}] for d in drafts
    ]
    # A conversation's later turns get seeds of their own; its first turn samples as a single prompt would.
    seeds: list[int | None] = [
        case_seed(d.case.case_id if d.depth == 1 else f"{d.case.case_id}#{d.depth}") if stack.sample else None
        for d in drafts
    ]
    started = time.perf_counter()
    completions = tutor.generate(conversations, stack.params, seeds)
    if len(completions) != len(drafts):
        raise InternalError(f"tutor returned {len(completions)} completions for {len(drafts)} prompts")
    share = (time.perf_counter() - started) / len(drafts)
    for d, completion in zip(drafts, completions, strict=True):
        d.response = TutorReply(**completion.model_dump(), source="tutor")
        d.tutor_ran = True
        d.time("tutor", share)


def _judge_input(draft: Draft) -> JudgeInput:
    assert draft.response is not None, "the judge stage sees only drafts with a final response"
    talk = draft.case.is_conversation
    return JudgeInput(
        prompt=draft.user_text,
        response=draft.response.text,
        source=draft.response.source,
        is_harmful=turn_label(draft.case, draft.case.turns[draft.position]) if talk else draft.case.is_harmful,
        context=tuple(Turn(role=t.role, content=t.content, source=t.source) for t in draft.done),
        cut_off=draft.response.finish_reason == "length",
    )


def judge_stage(drafts: list[Draft], stack: Stack) -> None:
    def run(batch: list[Draft]) -> None:
        started = time.perf_counter()
        verdicts = stack.judge.judge([_judge_input(d) for d in batch])
        if len(verdicts) != len(batch):
            raise InternalError(f"judge returned {len(verdicts)} verdicts for {len(batch)} responses")
        share = (time.perf_counter() - started) / len(batch)
        for d, verdict in zip(batch, verdicts, strict=True):
            d.verdict = verdict
            d.time("judge", share)

    judged = [d for d in drafts if not d.stopped and d.response is not None]
    if judged:
        _in_batch_or_alone(judged, "judge", run)
    for d in judged:
        if d.case.is_conversation and d.verdict is not None and not d.stopped:
            d.close_turn(stack)


Step = Literal["attacker", "guard", "tutor", "refuse", "judge"]


def next_step(draft: Draft, stack: Stack) -> Step | None:
    """Where a draft goes next, from what it already has: (attacker, for an attack turn) → guard →
    (screen stops here) → tutor, or the refusal when the guard stopped it → judge. The one route the
    engine and the cached walk follow."""
    if draft.stopped or draft.over:
        return None
    if draft.awaits_attacker:
        return "attacker"
    if stack.guard is not None and draft.guard is None:
        return "guard"
    if stack.guard_only:
        return None
    if draft.response is None:
        return "tutor" if routes_to_tutor(draft.guard, stack.malformed_policy) else "refuse"
    if draft.verdict is None:
        return "judge"
    return None


def walk_from_cache(
    drafts: list[Draft],
    stack: Stack,
    tutor: Callable[[], ChatProvider],
    attacker: Callable[[], Attacker] | None = None,
) -> None:
    """Every stage for the whole list at once, inside `stack.cached_only()`: a draft whose calls are
    all cached ends finished; one that met an uncached call stops there with `missed_cache` set and
    keeps the stages it finished, for the normal walk to go on from."""
    assert stack.cached_only is not None
    runners: dict[str, Callable[[list[Draft]], None]] = {
        "attacker": lambda due: attacker_stage(due, stack, attacker or stack.attacker),
        "guard": lambda due: guard_stage(due, stack),
        "tutor": lambda due: tutor_stage(due, stack, tutor),
        "judge": lambda due: judge_stage(due, stack),
    }
    # A conversation takes one pass per live turn; a pass in which no stage had work ends the walk.
    passes = 1 + max((len(d.case.turns) for d in drafts), default=0)
    with stack.cached_only():
        for _ in range(passes):
            ran = False
            for stage, run in runners.items():
                due = []
                for d in drafts:
                    step = next_step(d, stack)
                    if step == "refuse":
                        refuse(d, stack)
                        step = next_step(d, stack)
                    if step == stage:
                        due.append(d)
                if due:
                    run(due)
                    ran = True
            if not ran:
                return


def preflight_error(judge: Judge) -> str | None:
    """One known-easy judgement before the first case; a broken judge fails every case at once
    instead of after all guard and tutor calls were paid for."""
    probe = JudgeInput(
        prompt="What is two plus two?", response="Two plus two is four.", source="tutor", is_harmful=False
    )
    try:
        [verdict] = judge.judge([probe])
    except CacheMiss:
        raise  # not an answer about the judge: the preflight is made the normal way
    except Exception as exc:  # noqa: BLE001
        return f"judge preflight failed: {type(exc).__name__}: {exc}"
    if verdict.malformed:
        said = " ".join(verdict.raw.split())[:300]
        return (
            f"judge preflight failed: {verdict.reason}; the model said: {said!r}. Try a model that follows "
            'instructions, structured = "on" for a server with JSON-schema output (vLLM, llama.cpp, OpenAI), '
            "or a larger max_tokens in the alias's params"
        )
    return None
