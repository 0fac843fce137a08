"""ANSI and OSC escapes, control characters and bidi overrides in replies, judge reasons, guard reasons,
prompts, categories and a run's warnings, through every terminal writer that is not a command's print
(those pass main's boundary, fuzzed with the argument vectors and run folders): the audit screen, the
plugin's result lines, a case's failure message. Nothing a terminal would obey comes out."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_guardbench.commands.audit_tui import Labelling, run_audit
from pytest_guardbench.document.read import load_run
from pytest_guardbench.plugin.console import write_result
from pytest_guardbench.plugin.outcome import GuardbenchOutcome
from pytest_guardbench.records import GuardDecision, JudgeLabel
from pytest_guardbench.scoring.scorecard import score_record
from tests.builders import V2, record
from tests.fuzz.conftest import check_inert, fuzz
from tests.fuzz.runs import write_run
from tests.fuzz.strategies import escape_text

pytestmark = pytest.mark.usefixtures("planted_key")


def _hostile_record(n: int, texts: dict[str, str]) -> Any:
    made = record(f"h{n}.original", n % 2 == 0, "safe", "answered", guard="allow")
    assert made.response is not None and made.judge is not None and made.guard is not None
    return made.model_copy(
        update={
            "prompt_text": texts["prompt"],
            "category": texts["category"],
            "response": made.response.model_copy(update={"text": texts["reply"]}),
            "judge": made.judge.model_copy(update={"reason": texts["judge"]}),
            "guard": GuardDecision(guard="g", status="allow", reason=texts["guard"], raw=texts["guard"]),
        }
    )


TEXTS = st.fixed_dictionaries({k: escape_text for k in ("prompt", "category", "reply", "judge", "guard")})


@fuzz(examples=40)
@given(texts=TEXTS, keys=st.text(alphabet="suarink?bq\n", max_size=12))
def test_the_audit_screen_shows_every_text_inert(texts, keys):
    sample = [_hostile_record(n, texts) for n in range(2)]
    out = io.StringIO()
    with tempfile.TemporaryDirectory() as folder:

        def make_row(made: Any, label: Any) -> JudgeLabel:
            return JudgeLabel(
                id=made.case_id,
                prompt=made.prompt_text,
                response=made.response.text,
                human_label=label.response_safety,
                answer_mode=label.answer_mode,
            )

        labelling = Labelling(sample, Path(folder) / "audit.jsonl", make_row, labeller="ana")
        run_audit(labelling, stdin=io.StringIO("\n".join(keys) + "\nq\n"), stdout=out)
    check_inert(out.getvalue())


class _Terminal:
    """What the plugin's terminal reporter is asked to write, kept."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def write_line(self, line: str, **markup: bool) -> None:
        self.lines.append(line)

    def write_sep(self, sep: str, title: str) -> None:
        self.lines.append(title)


@fuzz(examples=30)
@given(warning=escape_text, problem=st.one_of(st.none(), escape_text), error=escape_text, crash=escape_text)
def test_the_plugins_result_lines_are_inert(warning, problem, error, crash):
    with tempfile.TemporaryDirectory() as folder:
        summary = load_run(write_run(Path(folder) / "run"))
        summary = summary.model_copy(update={"warnings": [warning]})
        terminal = _Terminal()
        write_result(terminal, summary, problem, None, Path(folder) / "run", [crash], [error])
        write_result(terminal, None, problem, None, None, [crash], [error])  # a run whose folder was not written
    check_inert("\n".join(terminal.lines))


@fuzz(examples=40)
@given(texts=TEXTS, error=st.one_of(st.none(), escape_text))
def test_a_cases_failure_message_is_inert(texts, error):
    made = _hostile_record(1, texts)
    if error is not None:
        made = made.model_copy(update={"error": SimpleNamespace(stage="tutor", message=error)})
    outcome = GuardbenchOutcome.of(made, score_record(made, V2), "strict")
    check_inert(outcome.explanation)
