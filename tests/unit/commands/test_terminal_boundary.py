"""The one terminal boundary (`_util.terminal.shown`): a reply, a judge's reason, a file name or an
argument with escape sequences reaches the terminal inert, through the audit screen on a real
pseudo-terminal, every command's output and the plugin's lines."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from pytest_guardbench._util.terminal import InertStream, shown
from pytest_guardbench.commands.main import main
from pytest_guardbench.runfolder.folder import ResultsWriter
from tests.builders import record
from tests.unit.commands.audit_terminal import Terminal

TITLE = "\x1b]0;pwned\x07"  # sets the window title
CLEAR = "\x1b[2J\x1b[H"  # clears the screen
CLIPBOARD = "\x1b]52;c;ZWNobyBwd25lZA==\x07"  # writes the clipboard (OSC 52)
BIDI = "\u202eevil\u202c"
HOSTILE = f"hello {TITLE}{CLEAR}{CLIPBOARD} bye\rover\bwrite \x9b31m {BIDI}"
# The audit screen's own clear, the one sequence it may send.
SCREEN_CLEAR = "\x1b[2J\x1b[H"
STEERING = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _inert(text: str) -> bool:
    return STEERING.search(text.replace(SCREEN_CLEAR, "").replace("\r\n", "\n")) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\x1b]0;t\x07", "\\u001b]0;t\\u0007"),
        ("a\nb\tc\rd\be\f", "a\\nb\\tc\\rd\\be\\f"),
        ("\x9b31m \x85 \x7f", "\\u009b31m \\u0085 \\u007f"),
        ("\u202eabc\u2066\u200f\u061c\u2028", "\\u202eabc\\u2066\\u200f\\u061c\\u2028"),
        ("half \ud800 pair", "half \\ud800 pair"),
        ("naïve café 🙂 שלום e\u0301 nbsp\u00a0 zwj\u200d", "naïve café 🙂 שלום e\u0301 nbsp\u00a0 zwj\u200d"),
    ],
)
def test_shown_makes_every_steering_character_visible_and_leaves_the_rest(text, expected):
    assert shown(text) == expected


def test_shown_keeps_lines_and_tabs_only_when_asked_and_its_escapes_are_json():
    assert shown("a\nb\tc\x1b", lines=True) == "a\nb\tc\\u001b"
    document = json.dumps({"reply": HOSTILE}, ensure_ascii=False)
    assert json.loads(shown(document)) == {"reply": HOSTILE}, "a JSON document stays the same document"
    assert _inert(shown(document)) and _inert(shown(HOSTILE, lines=True))


def test_an_inert_stream_writes_every_text_inert_and_answers_for_its_stream(capsys):
    stream = InertStream(sys.stdout)
    assert stream.write(HOSTILE) == len(HOSTILE)
    assert stream.isatty() is sys.stdout.isatty()
    assert _inert(capsys.readouterr().out)


@pytest.fixture
def hostile_run(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    writer = ResultsWriter(folder / "results.jsonl")
    for n in range(4):
        made = record(f"h{n}.original", n % 2 == 0, "safe", "refused_or_blocked" if n % 2 == 0 else "answered")
        writer.write(
            made.model_copy(
                update={
                    "prompt_text": f"prompt {n} {TITLE}",
                    "category": f"Danger{CLEAR}",
                    "response": made.response.model_copy(update={"text": f"reply {n} {HOSTILE}"}),
                    "judge": made.judge.model_copy(update={"reason": f"judge says {CLIPBOARD}{BIDI}"}),
                }
            )
        )
    writer.close()
    (folder / "summary.json").write_text(json.dumps({"metric_definitions": {"policy": "assistant_policy_v2"}}))
    return folder


def test_a_reply_with_a_title_a_clear_and_a_clipboard_write_reaches_the_audit_screen_inert(hostile_run, tmp_path):
    out = tmp_path / "audit.jsonl"
    term = Terminal(str(hostile_run), "--sample", "2", "--out", str(out), "--labeller", "ana", "--show-judge")
    term.wait_for("Is the response safe")
    screen = term.seen
    assert "\\u001b]52;c;ZWNobyBwd25lZA==\\u0007" in screen, "the clipboard write is shown, as its escapes"
    assert "\\u001b]0;pwned\\u0007" in screen and "\\u202eevil" in screen
    term.press("s", "Is the response safe")
    term.press("a", "Answer mode?")
    term.press("q", "case 2/2")
    assert term.close() == 0
    assert _inert(screen + term.seen), "no escape sequence of the reply reached the terminal"
    assert screen.count("\x1b") == screen.count(SCREEN_CLEAR) * 2, "only the screen's own clear"


def test_the_judge_verdict_revealed_after_a_label_is_inert(hostile_run, tmp_path):
    out = tmp_path / "audit.jsonl"
    term = Terminal(str(hostile_run), "--sample", "2", "--out", str(out), "--labeller", "ana")
    term.press("s", "Is the response safe")
    term.press("a", "Answer mode?")
    revealed = term.wait_for("case 2/2")
    term.press("q", "case 2/2")
    assert term.close() == 0
    assert "the judge said" in revealed and "\\u001b]52;c;" in revealed and _inert(revealed + term.seen)


def test_every_command_prints_through_the_boundary(tmp_path, capsys):
    hostile = tmp_path / f"run{TITLE}{CLIPBOARD}"
    hostile.mkdir()
    assert main(["compare", str(hostile), str(tmp_path)]) == 4
    err = capsys.readouterr().err
    assert "has no summary.json" in err and "\\u001b]52;c;" in err and _inert(err)
    assert main(["judge-quality", str(tmp_path / f"labels{CLEAR}.jsonl"), "--judge", "rules"]) == 4
    err = capsys.readouterr().err
    assert "\\u001b[2J" in err and _inert(err)


def test_argparse_errors_echo_arguments_inert():
    # argparse writes to sys.stderr itself, before any command runs.
    result = subprocess.run(
        [sys.executable, "-m", "pytest_guardbench.commands.main", "audit", "x", f"--bogus{TITLE}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 4 and "--bogus" in result.stderr
    assert _inert(result.stderr)
