"""The labelling rubric: how a person labels one tutor reply, as the one source that every labelling tool
and the docs render. For each field (response safety, answer mode) its choices with their keys and
one-line rules, and the decision rules in the order they are asked; the boundaries where labellers split,
with the line the rubric draws; and worked examples, real replies from the shipped development datasets
with their rows' labels and why.

The text lives in `rubric.json` beside this module, so that a change to a rule touches no code; this
module types it, checks it against `RUBRIC_VERSION` and renders it. The rules are written, in our own
words, from the original project's human audit rubric and its assistant_policy_v2 (the MinorBench
repository, TongmengXie/minor_bench, `docs/human_audit_rubric.md`), and extended to decide the replies
our labellers split on: cut-off, looping, misread and off-topic replies, refusals of something not
asked, jailbreak frames. A change to any rule or example is a new version, in both places.

Pure: no terminal, no HTML. For the labelling tools: `rule_for` (a choice's rule line), `examples_of` (the
examples of a boundary or a choice), `field_text` and `rubric_text` (plain text for a terminal).
"""

from __future__ import annotations

import functools
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import ConfigDict, TypeAdapter, ValidationError

from pytest_guardbench.errors import InternalError, UsageError
from pytest_guardbench.records import AnswerMode, ResponseSafety

RUBRIC_VERSION = "2026-11-28.1"
RUBRIC_FILE = Path(__file__).with_name("rubric.json")
CUT = "[…]"  # marks where an example's reply was shortened

FieldName = Literal["response_safety", "answer_mode"]
BoundaryName = Literal[
    "cut_off_before_answer",
    "partial_or_wrong_answer",
    "misread_question",
    "off_topic",
    "loop_after_answer",
    "refusal_of_unasked",
    "refused_vs_indirect",
    "refusal_taken_back",
    "refused_vs_non_answer",
    "indirect_vs_non_answer",
    "brief_condemnation_vs_explanation",
    "jailbreak_frame_adopted",
    "poor_safety_advice",
    "harmful_request_answered_safely",
]


class RubricError(UsageError):
    """An unknown field, choice or boundary; the message lists the known ones."""


# A misspelt key in rubric.json must fail its loading, not vanish.
_STRICT = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class Choice:
    """One label of a field: its value in a labels file, the key that gives it, the name tools show."""

    __pydantic_config__ = _STRICT

    value: ResponseSafety | AnswerMode
    key: str
    name: str
    rule: str


@dataclass(frozen=True)
class Rule:
    """One decision rule; its `id` (S1, M3, ...) is how an example's `why` names it."""

    __pydantic_config__ = _STRICT

    id: str
    title: str
    text: str


@dataclass(frozen=True)
class FieldRubric:
    """A field: the question to ask, its choices, and its rules in the order they are asked (the first
    that applies decides)."""

    __pydantic_config__ = _STRICT

    field: FieldName
    title: str
    question: str
    choices: tuple[Choice, ...]
    rules: tuple[Rule, ...]


@dataclass(frozen=True)
class Boundary:
    """A place where two labellers split, and the line the rubric draws there."""

    __pydantic_config__ = _STRICT

    name: BoundaryName
    title: str
    line: str


@dataclass(frozen=True)
class Example:
    """A real reply from a shipped dataset (`dataset`, row `row_id`) with that row's two labels and why.
    `reply` may be shortened with `CUT` where the cut cannot change the labels; `cut` then says what went."""

    __pydantic_config__ = _STRICT

    boundary: BoundaryName
    dataset: str
    row_id: str
    prompt: str
    reply: str
    response_safety: ResponseSafety
    answer_mode: AnswerMode
    rules: tuple[str, ...]
    why: str
    cut: str | None = None


@dataclass(frozen=True)
class Rubric:
    """The whole rubric of one version."""

    __pydantic_config__ = _STRICT

    version: str
    before_you_start: tuple[str, ...]
    fields: tuple[FieldRubric, ...]
    boundaries: tuple[Boundary, ...]
    examples: tuple[Example, ...]


def load_rubric(path: Path) -> Rubric:
    """The rubric in `path`; `InternalError` naming the file if it is not this code's rubric version."""
    try:
        loaded = TypeAdapter(Rubric).validate_json(path.read_bytes())
    except (OSError, ValidationError) as error:
        raise InternalError(f"{path}: the rubric cannot be read: {error}") from error
    if loaded.version != RUBRIC_VERSION:
        raise InternalError(f"{path}: rubric version {loaded.version}, but the code is of {RUBRIC_VERSION}")
    return loaded


@functools.lru_cache(maxsize=1)
def rubric() -> Rubric:
    """The shipped rubric, read once."""
    return load_rubric(RUBRIC_FILE)


def field_rubric(field: str) -> FieldRubric:
    """The rubric of one field (`response_safety` or `answer_mode`)."""
    fields = rubric().fields
    for candidate in fields:
        if candidate.field == field:
            return candidate
    raise RubricError(f"unknown field {field!r}; known: {', '.join(f.field for f in fields)}")


def choice_of(field: str, choice: str) -> Choice:
    """The choice of `field` whose value (`non_answer`) or key (`n`) is `choice`."""
    choices = field_rubric(field).choices
    for candidate in choices:
        if choice in (candidate.value, candidate.key):
            return candidate
    raise RubricError(f"unknown {field} choice {choice!r}; known: {', '.join(c.value for c in choices)}")


def rule_for(field: str, choice: str) -> str:
    """The one-line rule of a choice (by value or key), as a labelling tool shows it beside the key."""
    return choice_of(field, choice).rule


def boundary_named(name: str) -> Boundary:
    """The boundary called `name`."""
    boundaries = rubric().boundaries
    for boundary in boundaries:
        if boundary.name == name:
            return boundary
    raise RubricError(f"unknown boundary {name!r}; known: {', '.join(b.name for b in boundaries)}")


def examples_of(
    boundary: str | None = None, field: str | None = None, choice: str | None = None
) -> tuple[Example, ...]:
    """The worked examples, in the file's order: all, those of a boundary, those of a choice (`field` and
    `choice`, by value or key), or those of both."""
    found = rubric().examples
    if boundary is not None:
        name = boundary_named(boundary).name
        found = tuple(e for e in found if e.boundary == name)
    if field is not None or choice is not None:
        if field is None or choice is None:
            raise RubricError("examples of a choice need both its field and the choice")
        value = choice_of(field, choice).value
        found = tuple(e for e in found if (e.response_safety if field == "response_safety" else e.answer_mode) == value)
    return found


def _wrapped(text: str, width: int, indent: str, hanging: str | None = None) -> list[str]:
    # Row ids and keys stay whole (they are searched for and copied), so lines break at spaces only.
    lines = textwrap.wrap(
        text,
        width,
        initial_indent=indent,
        subsequent_indent=hanging or indent,
        break_long_words=False,
        break_on_hyphens=False,
    )
    return lines or [indent]


def field_text(field: str, width: int = 100) -> str:
    """One field's question, choices (with their keys) and ordered rules, as plain text for a terminal."""
    rubric_of_field = field_rubric(field)
    lines = _wrapped(f"{rubric_of_field.title}: {rubric_of_field.question}", width, "", "  ")
    name_width = max(len(c.name) for c in rubric_of_field.choices)
    for choice in rubric_of_field.choices:
        head = f"  {choice.key}  {choice.name:<{name_width}}  "
        lines += _wrapped(choice.rule, width, head, " " * len(head))
    lines.append("  Ask in this order; the first rule that applies decides:")
    for rule in rubric_of_field.rules:
        lines += _wrapped(f"{rule.id} {rule.title}. {rule.text}", width, "  ", "     ")
    return "\n".join(lines)


def example_text(example: Example, width: int = 100) -> str:
    """One worked example as plain text: where it comes from, the two texts, the labels and why."""
    lines = _wrapped(f"{example.dataset}, row {example.row_id}", width, "    ", "      ")
    lines += _wrapped(f"child: {example.prompt}", width, "      ", "        ")
    for number, paragraph in enumerate(p for p in example.reply.splitlines() if p.strip()):
        lines += _wrapped(paragraph, width, "      reply: " if number == 0 else "        ", "        ")
    if example.cut:
        lines += _wrapped(f"cut: {example.cut}", width, "      ", "        ")
    lines += _wrapped(f"labels: {example.response_safety}, {example.answer_mode}", width, "      ")
    lines += _wrapped(f"why: {example.why}", width, "      ", "        ")
    return "\n".join(lines)


def boundary_text(name: str, width: int = 100, with_examples: bool = True) -> str:
    """One boundary's line and, unless `with_examples` is false, its worked examples."""
    boundary = boundary_named(name)
    lines = _wrapped(f"{boundary.title}: {boundary.line}", width, "  ", "    ")
    if with_examples:
        lines += [example_text(e, width) for e in examples_of(boundary=name)]
    return "\n".join(lines)


def rubric_text(width: int = 100, with_examples: bool = False) -> str:
    """The whole rubric as plain text for a terminal; the worked examples only when asked for."""
    whole = rubric()
    before = [f"The labelling rubric, version {whole.version}", "Before you start:"]
    before += ["\n".join(_wrapped(line, width, "  - ", "    ")) for line in whole.before_you_start]
    boundaries = ["Where labellers split:", *(boundary_text(b.name, width, with_examples) for b in whole.boundaries)]
    sections = ["\n".join(before), *(field_text(f.field, width) for f in whole.fields), "\n".join(boundaries)]
    return "\n\n".join(sections)
