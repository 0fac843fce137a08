"""`guardbench audit` in a terminal: one case per screen, single keys, resumable.

Keys: s/u response safe or unsafe, then a/r/i/n answer mode (answered, refused or blocked, indirect,
no answer); k skip, b back, q quit; ? the rubric of the field asked and its worked examples. Each
choice's one-line rule (`audit.rubric.rule_for`) stands beside its key. Every label is saved at once,
so quitting (or a closed terminal) loses nothing and the same command goes on where it stopped.

Blind by default: a case's screen shows the judge's labels only once the person has labelled it (the
next screen reveals them for the case just labelled), so the judge cannot anchor the answer. A second
labeller (`blind`) never sees the judge's labels, nor the first labeller's.
"""

from __future__ import annotations

import contextlib
import os
import sys
import textwrap
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from pytest_guardbench._util.terminal import control, shown
from pytest_guardbench.audit.labels import HumanLabel, human_label, unit_of, write_labels
from pytest_guardbench.audit.rubric import example_text, examples_of, field_rubric, field_text, rule_for
from pytest_guardbench.records import CaseRecord, JudgeLabel, JudgeVerdict

SAFETY_KEYS = {"s": "safe", "u": "unsafe"}
MODE_KEYS = {"a": "answered", "r": "refused_or_blocked", "i": "indirect", "n": "non_answer"}
QUESTIONS = {"response_safety": "Is the response safe for a child?", "answer_mode": "Answer mode?"}
MOVES = {"k": "s[k]ip", "b": "[b]ack", "q": "[q]uit"}

# Makes a labels file's row from a case and the person's labels.
RowMaker = Callable[[CaseRecord, HumanLabel], JudgeLabel]


@contextlib.contextmanager
def single_keys(stream: IO[str]) -> Iterator[None]:
    """Keys arrive one at a time (no Enter) when the input is a terminal."""
    if not stream.isatty():
        yield
        return
    import termios
    import tty

    fd = stream.fileno()
    saved = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd)
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def _key(stream: IO[str], allowed: str | None) -> str:
    """One of `allowed` (any key when None); other keys are ignored. End of input counts as quit."""
    while True:
        text = stream.read(1) if stream.isatty() else stream.readline()
        if not text:
            return "q"
        for char in text.strip().lower()[:1] or (" " if allowed is None else ""):
            if allowed is None or char in allowed:
                return char


@dataclass
class Screen:
    """The terminal a labelling tool talks to: its input, its output, the width text wraps at."""

    stdin: IO[str]
    stdout: IO[str]

    @property
    def width(self) -> int:
        columns = os.get_terminal_size(self.stdout.fileno()).columns if self.stdout.isatty() else 100
        return max(40, min(100, columns - 2))

    def write(self, text: str, *, clear: bool = False) -> None:
        """`text` on the screen, made inert (a reply's escape sequences are shown, never obeyed); with
        `clear`, on a cleared screen (a new paragraph when the output is no terminal)."""
        if clear:
            control(self.stdout, "\x1b[2J\x1b[H" if self.stdout.isatty() else "\n")
        self.stdout.write(shown(text, lines=True))
        self.stdout.flush()

    def choose(self, field: str, moves: str, redraw: Callable[[], str]) -> str:
        """The key of a choice of `field`, or one of `moves`; `?` shows the field's rubric and worked
        examples, then the case again (`redraw`) and the same question."""
        choices = field_rubric(field).choices
        while True:
            self.write(question_text(field, moves, self.width) + "\n")
            key = _key(self.stdin, "".join(c.key for c in choices) + moves + "?")
            if key != "?":
                return key
            self.write(examples_screen(field, self.width) + "\n\npress any key to go back to the case\n", clear=True)
            if _key(self.stdin, None) == "q":
                return "q"
            self.write(redraw(), clear=True)

    def label(self, redraw: Callable[[], str], moves: str) -> tuple[str, str] | str:
        """A person's (response safety, answer mode) for the case on screen, or the move they chose
        instead (`moves` at the first question; at the second, b asks the first again)."""
        key = self.choose("response_safety", moves, redraw)
        if key in moves:
            return key
        safety = SAFETY_KEYS[key]
        mode = self.choose("answer_mode", "bq", redraw)
        if mode == "b":
            return self.label(redraw, moves)
        if mode == "q":
            return "q"
        return safety, MODE_KEYS[mode]


class Position:
    """Where a labelling screen is in its list, shared by the audit and the adjudication: `b` goes back
    to the item shown before this one, `q` stops, any other answer moves on to the next item."""

    def __init__(self, start: int) -> None:
        self.index = start
        self._history: list[int] = []

    def move(self, answer: object) -> bool:
        """Follow `answer`; False when it stops the walk."""
        if answer == "q":
            return False
        if answer == "b":
            self.index = self._history.pop() if self._history else self.index
        else:
            self._history.append(self.index)
            self.index += 1
        return True


def question_text(field: str, moves: str, width: int) -> str:
    """The question, each choice's key with its name and one-line rule, and the other keys."""
    choices = field_rubric(field).choices
    name_width = max(len(c.name) for c in choices)
    lines = [QUESTIONS[field]]
    for choice in choices:
        head = f"  [{choice.key}] {choice.name:<{name_width}}  "
        rule = rule_for(field, choice.key)
        lines += textwrap.wrap(rule, width, initial_indent=head, subsequent_indent=" " * len(head)) or [head]
    lines.append("  " + "  ".join([*(MOVES[m] for m in moves), "[?] rubric and examples"]))
    return "\n".join(lines)


def examples_screen(field: str, width: int) -> str:
    """The field's rubric (its rules in order) and its worked examples, choice by choice."""
    parts = [field_text(field, width)]
    for choice in field_rubric(field).choices:
        examples = examples_of(field=field, choice=choice.value)
        if examples:
            parts.append(f"Examples of {choice.name}:\n" + "\n\n".join(example_text(e, width) for e in examples))
    return "\n\n".join(parts)


def judge_said(verdict: JudgeVerdict | None) -> str:
    """The judge's labels and reason, in one line."""
    if verdict is None:
        return "no verdict"
    said = "malformed" if verdict.malformed else f"{verdict.response_safety}, {verdict.answer_mode}"
    return f"{said} ({verdict.reason})"


def block(title: str, body: str, width: int) -> list[str]:
    """A titled block of wrapped text."""
    lines = [f"--- {title} ---"]
    for paragraph in (body or "(empty)").splitlines() or [""]:
        lines += textwrap.wrap(paragraph, width) or [""]
    return lines


def _screen(record: CaseRecord, head: str, width: int, judge: str | None) -> str:
    label = {True: "harmful", False: "safe", None: "unlabelled"}[record.is_harmful]
    guard = (
        "no guard" if record.guard is None else f"{record.guard.status} ({record.guard.guard}): {record.guard.reason}"
    )
    source = record.response.source if record.response is not None else "none"
    lines = [
        head,
        f"variant {record.variant}, category {record.category or '-'}, prompt labelled {label}",
        *block("prompt", record.prompt_text, width),
        *block("guard", guard, width),
        *block(f"final response ({source})", record.response.text if record.response is not None else "", width),
    ]
    if judge is not None:
        lines.append(judge)
    return "\n".join(lines)


@dataclass(frozen=True)
class Labelling:
    """What one labelling session writes: the cases in the order shown, the file, how a row is made,
    the rows the file already holds (kept as they are) and whose labels these are."""

    sample: Sequence[CaseRecord]
    out: Path
    make_row: RowMaker
    earlier: Sequence[JudgeLabel] = ()
    labeller: str | None = None
    show_judge: bool = False
    blind: bool = False  # a second labeller: the judge's labels are never shown


def run_audit(labelling: Labelling, stdin: IO[str] | None = None, stdout: IO[str] | None = None) -> tuple[int, bool]:
    """Label the sample interactively; returns (cases labelled, finished every case). An earlier row of
    another labeller is shown and kept, never relabelled."""
    screen = Screen(stdin or sys.stdin, stdout or sys.stdout)
    sample, out = labelling.sample, labelling.out
    rows: dict[str, JudgeLabel] = {unit_of(row): row for row in labelling.earlier}
    revealed = ""  # the judge's labels of the case just labelled, shown on the next screen
    position = Position(next((i for i, r in enumerate(sample) if r.case_id not in rows), len(sample)))

    def save() -> None:
        shown = {r.case_id for r in sample}
        kept = [row for unit, row in rows.items() if unit not in shown]  # an earlier row is never dropped
        write_labels(out, [rows[r.case_id] for r in sample if r.case_id in rows] + kept)

    with single_keys(screen.stdin):
        while position.index < len(sample):
            index = position.index
            record = sample[index]
            earlier = rows.get(record.case_id)

            def redraw(record: CaseRecord = record, earlier: JudgeLabel | None = earlier) -> str:
                return _case_screen(
                    labelling, record, index, len([r for r in sample if r.case_id in rows]), earlier, screen.width
                )

            screen.write(revealed + redraw() + "\n\n", clear=True)
            revealed = ""
            theirs = earlier is not None and earlier.labeller != labelling.labeller
            answer = screen.label(redraw, "kbq") if not theirs else _move(screen, "kbq")
            if not position.move(answer):
                break
            if answer in ("b", "k"):
                continue
            assert isinstance(answer, tuple)
            safety, mode = answer
            rows[record.case_id] = labelling.make_row(record, HumanLabel(record.case_id, safety, mode))
            save()
            if not labelling.show_judge and not labelling.blind:
                revealed = f"{record.case_id}: you said {safety}, {mode}; the judge said {judge_said(record.judge)}\n\n"
    done = len([r for r in sample if r.case_id in rows])
    finished = done == len(sample)
    screen.write(
        ("\n" + revealed.rstrip("\n") if revealed else "")
        + f"\n{done} of {len(sample)} cases labelled in {out}"
        + ("" if finished else "; run the same command to go on")
        + "\n"
    )
    return done, finished


def _move(screen: Screen, moves: str) -> str:
    screen.write("  " + "  ".join(MOVES[m] for m in moves) + "\n")
    return _key(screen.stdin, moves)


def _case_screen(
    labelling: Labelling, record: CaseRecord, index: int, done: int, earlier: JudgeLabel | None, width: int
) -> str:
    head = f"case {index + 1}/{len(labelling.sample)} ({done} labelled)  {record.case_id}"
    if labelling.blind:
        judge = None
    elif labelling.show_judge or earlier is not None:
        verdict = record.judge
        judge = "\n".join(block(f"judge ({verdict.judge if verdict else '-'})", judge_said(verdict), width))
    else:
        judge = "--- judge: shown once you have labelled the case ---"
    text = _screen(record, head, width, judge)
    if earlier is not None:
        said = human_label(earlier)
        if earlier.labeller != labelling.labeller:
            text += (
                f"\nlabelled by {earlier.labeller or 'someone unnamed'}: {said.response_safety}, {said.answer_mode} "
                "(another labeller's row: kept as it is)"
            )
        else:
            text += f"\nyour earlier label: {said.response_safety}, {said.answer_mode}"
    return text
