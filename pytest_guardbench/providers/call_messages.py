"""The messages between a run and its call processes (`providers/call_processes.py`): the one place
that says what crosses the pipe, each kind a small frozen dataclass.

The run sends `AddModel` (a model's settings, so the call process builds its own client for it),
`Request` (one numbered call: `Generate`, `Classify`, `Moderate` or `CountCalls`) and `Close`; the
call process answers each `Request` with an `Answer` or a `Failure` carrying the same `call_id`.
Frozen dataclasses rather than bare tuples: a pickled round trip costs a few microseconds more
than a tuple's (about 9 against 4 for a group of four calls), against one to two milliseconds of
client CPU per call. No API key crosses the pipe: `AddModel.settings` names the environment variable.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_guardbench.providers.base import ClassifyRequest, GenerationParams, Message, ProviderSettings


@dataclass(frozen=True)
class AddModel:
    """Build model number `model` from `settings` (OpenAICompatProvider's keyword arguments)."""

    model: int
    settings: ProviderSettings


@dataclass(frozen=True)
class Close:
    """Answer what is in flight, close every client and exit."""


@dataclass(frozen=True)
class Generate:
    """`generate` on model number `model`."""

    model: int
    conversations: list[list[Message]]
    params: GenerationParams
    seeds: list[int | None]


@dataclass(frozen=True)
class Classify:
    """`classify` on model number `model`."""

    model: int
    request: ClassifyRequest


@dataclass(frozen=True)
class Moderate:
    """`moderate` on model number `model`."""

    model: int
    texts: list[str]


@dataclass(frozen=True)
class CountCalls:
    """Model number `model`'s call counts in this call process (its `stats()`)."""

    model: int


Call = Generate | Classify | Moderate | CountCalls


@dataclass(frozen=True)
class Request:
    """One call, numbered so that its answer finds the caller waiting for it."""

    call_id: int
    call: Call


@dataclass(frozen=True)
class Answer:
    """What call `call_id` returned: the call's own result (a list of completions, classifications or
    moderation results, or a stats dict for `CountCalls`)."""

    call_id: int
    value: object


@dataclass(frozen=True)
class Failure:
    """Why call `call_id` failed: a provider error's text, raised again on the run's side."""

    call_id: int
    reason: str


ToCallProcess = AddModel | Request | Close
FromCallProcess = Answer | Failure
