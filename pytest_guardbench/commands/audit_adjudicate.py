"""`guardbench audit --adjudicate A B` in a terminal: the replies two labellers labelled differently, one
per screen, with both labellers' labels and names and each choice's rule; never the judge's verdict.
The adjudicator gives the labels (the same keys as the audit: s/u, a/r/i/n, k skip, b back, q quit,
? the rubric and its examples). Every reply both labelled gets a settled row: those they agreed on at
once, the others as decided, each saved at once; the same command goes on where it stopped."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from pytest_guardbench.audit.adjudication import LabelPair
from pytest_guardbench.audit.labels import write_labels
from pytest_guardbench.commands.audit_tui import Position, Screen, block, single_keys
from pytest_guardbench.records import JudgeLabel

# Makes a settled row from a pair and the labels it is settled with.
Settle = Callable[[LabelPair, tuple[str, str]], JudgeLabel]


@dataclass(frozen=True)
class Adjudication:
    """One adjudication: the pairs both labelled, the settled file, how a settled row is made and the
    settled rows the file already holds (kept as they are)."""

    pairs: Sequence[LabelPair]
    out: Path
    settle: Settle
    earlier: dict[str, JudgeLabel]


def _said(row: JudgeLabel, which: str) -> str:
    return f"{which} labeller ({row.labeller or 'unnamed'}): {row.human_label}, {row.answer_mode}"


def _pair_screen(pair: LabelPair, position: int, total: int, width: int) -> str:
    row = pair.first
    harmful = {True: "harmful", False: "safe", None: "unlabelled"}[row.is_harmful]
    return "\n".join(
        [
            f"disagreement {position}/{total}  {pair.unit}",
            f"category {row.category or '-'}, prompt labelled {harmful}",
            *block("prompt", row.prompt, width),
            *block("final response", row.response, width),
            "--- the two labels ---",
            _said(pair.first, "first"),
            _said(pair.second, "second"),
        ]
    )


def run_adjudication(
    adjudication: Adjudication, stdin: IO[str] | None = None, stdout: IO[str] | None = None
) -> tuple[int, int]:
    """Settle the pairs; returns (disagreements settled, disagreements). Agreed pairs are settled first,
    without a question."""
    screen = Screen(stdin or sys.stdin, stdout or sys.stdout)
    rows = dict(adjudication.earlier)
    pairs = adjudication.pairs

    def save() -> None:
        shown = {pair.unit for pair in pairs}
        kept = [row for unit, row in rows.items() if unit not in shown]
        write_labels(adjudication.out, [rows[p.unit] for p in pairs if p.unit in rows] + kept)

    for pair in pairs:
        if pair.agreed and pair.unit not in rows:
            rows[pair.unit] = adjudication.settle(pair, (pair.first.human_label, pair.first.answer_mode or ""))
    save()
    disagreements = [pair for pair in pairs if not pair.agreed]
    position = Position(next((i for i, p in enumerate(disagreements) if p.unit not in rows), len(disagreements)))
    with single_keys(screen.stdin):
        while position.index < len(disagreements):
            index = position.index
            pair = disagreements[index]

            def redraw(pair: LabelPair = pair, position: int = index + 1) -> str:
                text = _pair_screen(pair, position, len(disagreements), screen.width)
                settled = rows.get(pair.unit)
                return text + (f"\nsettled as: {settled.human_label}, {settled.answer_mode}" if settled else "")

            screen.write(redraw() + "\n\n", clear=True)
            answer = screen.label(redraw, "kbq")
            if not position.move(answer):
                break
            if isinstance(answer, tuple):
                rows[pair.unit] = adjudication.settle(pair, answer)
                save()
    settled = sum(1 for pair in disagreements if pair.unit in rows)
    screen.write(
        f"\n{settled} of {len(disagreements)} disagreements settled in {adjudication.out} "
        f"({len(pairs) - len(disagreements)} replies agreed)"
        + ("" if settled == len(disagreements) else "; run the same command to go on")
        + "\n"
    )
    return settled, len(disagreements)
