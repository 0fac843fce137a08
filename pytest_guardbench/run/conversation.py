"""A conversation case, turn by turn.

A script (`Case.turns`) is user turns and fixed assistant turns. A user turn followed by a fixed
assistant turn is context the pack wrote; every other user turn is *live*: the guard screens the
conversation up to it, the tutor answers it with the history (or the refusal text stands in when the
guard blocks, which ends the conversation), and the judge grades the reply in context. A live turn's
`depth` counts live turns from 1, so depth means the same for a plain script and one that a variant
primed with ten invented exchanges.

The conversation's verdict is built from the turns' verdicts (`conversation_verdict`, which lives in
`scoring.conversation_tally` so that the audit builds a conversation's truth from its replies' labels
by the same rule): unsafe when any reply is, so a scoring policy scores a conversation as it scores
one reply.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_guardbench.providers.base import Message
from pytest_guardbench.judges.base import JudgeInput
from pytest_guardbench.records import Case, CaseRecord, JudgeVerdict, Turn, TurnRecord
from pytest_guardbench.scoring.conversation_tally import conversation_verdict, first_unsafe_depth

__all__ = ["conversation_verdict"]  # the rule lives in scoring, where the audit's correction uses it too

# How many user turns a guard that reads text, not chats, gets: the newest ones, since a request
# split over turns is only visible to a guard that reads them together.
GUARD_WINDOW = 3


def turn_label(case: Case, turn: Turn) -> bool | None:
    """A user turn's ground truth: its own label when the pack gives one, else the conversation's."""
    return turn.is_harmful if turn.is_harmful is not None else case.is_harmful


def scripted(case: Case, start: int, stop: int, depth: int) -> list[TurnRecord]:
    """The pack's turns in `[start, stop)` as records: context the stack did not answer."""
    return [
        TurnRecord(
            role=turn.role,
            content=turn.content,
            source=turn.source,
            depth=depth,
            is_harmful=turn_label(case, turn) if turn.role == "user" else None,
        )
        for turn in case.turns[start:stop]
    ]


def as_messages(turns: Sequence[TurnRecord | Turn]) -> list[Message]:
    return [{"role": turn.role, "content": turn.content} for turn in turns]


def alternating(messages: Sequence[Message]) -> list[Message]:
    """Consecutive messages of one role joined into one: chat templates of guard models (Llama Guard 3)
    raise unless user and assistant alternate, and a guard-only screen has no replies between turns."""
    merged: list[Message] = []
    for message in messages:
        if merged and merged[-1]["role"] == message["role"]:
            merged[-1] = {"role": message["role"], "content": f"{merged[-1]['content']}\n{message['content']}"}
        else:
            merged.append({"role": message["role"], "content": message["content"]})
    return merged


def guard_window(done: Sequence[TurnRecord], current: str, size: int = GUARD_WINDOW) -> str:
    """The newest `size` user turns as one text, oldest first, for a guard that reads a single prompt."""
    users = [turn.content for turn in done if turn.role == "user"][-(size - 1) :] if size > 1 else []
    return "\n".join([*users, current])


def replies_to_judge(record: CaseRecord) -> list[tuple[int, JudgeInput]]:
    """Each reply of a recorded conversation as the judge saw it in the run: its user turn, the turns
    before that as context, and the user turn's label. Keyed by the reply's index in `record.turns`."""
    inputs: list[tuple[int, JudgeInput]] = []
    for i, turn in enumerate(record.turns):
        if turn.role != "assistant" or turn.reply is None or i == 0 or record.turns[i - 1].role != "user":
            continue
        user = record.turns[i - 1]
        context = tuple(Turn(role=t.role, content=t.content, source=t.source) for t in record.turns[: i - 1])
        inputs.append((i, JudgeInput(user.content, turn.reply.text, turn.reply.source, user.is_harmful, context)))
    return inputs


def with_turn_verdicts(record: CaseRecord, verdicts: dict[int, JudgeVerdict], judge: str) -> CaseRecord:
    """The conversation with new verdicts on the replies at the given indexes, and its whole verdict
    and first unsafe turn built again from them."""
    turns = tuple(
        turn.model_copy(update={"judge": verdicts[i]}) if i in verdicts else turn for i, turn in enumerate(record.turns)
    )
    return record.model_copy(
        update={
            "turns": turns,
            "judge": conversation_verdict(turns, judge),
            "first_unsafe_turn": first_unsafe_depth(turns),
        }
    )
