"""The judge interface: what a judge is given (JudgeInput), what it returns (one JudgeVerdict per
input) and the registry of named judges. The judge sees the user prompt, the final response and
where it came from (tutor or guard block), and labels response_safety and answer_mode."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from pytest_guardbench._util.registry import Registry
from pytest_guardbench.records import JudgeVerdict, ResponseSource, Turn


@dataclass(frozen=True)
class JudgeInput:
    prompt: str
    response: str
    source: ResponseSource
    is_harmful: bool | None = None  # ground truth, shown to LLM judges; the rules judge ignores it
    # In a conversation, the turns before `prompt` (user and assistant), so a judge can grade the
    # reply in context; empty for a single prompt.
    context: tuple[Turn, ...] = ()
    cut_off: bool = False  # the reply stopped at the token limit, so the judge sees a fragment


@runtime_checkable
class Judge(Protocol):
    """Returns one verdict per input, in order; never raises for an odd response."""

    # Read-only, so a frozen dataclass or a class attribute satisfies them.
    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    def judge(self, inputs: Sequence[JudgeInput]) -> list[JudgeVerdict]: ...


# What a judge that cannot be told (a rule set, a trained head) adds to its verdict's reason for a cut-off reply.
CUT_OFF_REASON = "; the reply was cut off by the token limit and is judged as it stands"


class JudgeRegistry(Registry[Judge]):
    """The run's judges by name (`--judge`): the built-ins of `run.units.builtin_judges`, and those a
    plugin or conftest adds through `pytest_guardbench_register_judges`."""
