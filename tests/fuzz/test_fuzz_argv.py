"""Argument vectors for every `guardbench` subcommand (its own options, with odd and out-of-range
values, control characters, line breaks, bytes that are not UTF-8, escape sequences and planted keys,
model specs holding the same, and paths that exist, do not, or are the wrong kind of thing), and
`--guardbench-*` option values through the settings the plugin builds from them. A documented status
that is not 3, one line naming what is wrong, no traceback, no planted key, nothing a terminal obeys."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from pytest_guardbench.commands import audit
from pytest_guardbench.commands.main import build_parser, main
from pytest_guardbench.settings.config import Settings
from pytest_guardbench.settings.options import OPTIONS, ConfigError
from tests.fuzz.conftest import PLAIN_SECRET, SECRET, check_outcome, fuzz
from tests.fuzz.runs import write_run
from tests.fuzz.strategies import hostile_text, odd_text

pytestmark = pytest.mark.usefixtures("planted_key")
# Commands that install packages or write a project (init), or only list (mutators), are left out.
COMMANDS = (
    "expand",
    "rejudge",
    "import-seed",
    "merge",
    "compare",
    "judge-quality",
    "audit",
    "correct",
    "screen",
    "label-agreement",
)
# Models that need nothing installed and no network: the rules judge, the keyword guard, and names
# that are wrong in every way a name can be.
MODEL_NAMES = (
    "rules",
    "keyword",
    "none",
    "nosuch",
    "openai:",
    "vllm:m@ftp://x",
    "vllm:@",
    "rules,rules,rules",
    "rules,rules",
    f"vllm:m@http://x?key={SECRET}",
    "offline-kb,rules",
    # Model specs with what a terminal would obey, a line break, a byte that is not UTF-8, a planted key.
    "rules\x1b]0;pwned\x07",
    "vllm:m\n@http://x",
    "openai:gpt\udcff",
    "keyword\u202e",
)
NUMBERS = ("0", "-1", "1", "3", "nan", "inf", "1e999", "0.5", "abc", "", "²", "99999999999")


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: sub for name, sub in action.choices.items() if name in COMMANDS}


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Paths an argument may name: a finished run, a pack, a labels file, a folder, nothing."""
    root = tmp_path_factory.mktemp("argv")
    run = write_run(root / "run")
    pack = root / "pack.json"
    pack.write_text(
        '{"name": "p", "items": [{"id": "a", "prompt_text": "how do plants grow", "metadata": {"is_harmful": false}}]}'
    )
    labels = root / "labels.jsonl"
    labels.write_text(
        '{"id": "p.i0.original", "prompt": "prompt 0", "response": "reply 0", "human_label": "safe", "answer_mode": "answered"}\n'
    )
    return {
        "run": str(run),
        "pack": str(pack),
        "labels": str(labels),
        "folder": str(root),
        "missing": str(root / "nope"),
        "results": str(run / "results.jsonl"),
        "shipped": "child_safety_v1",
        "misspelt": "child_safty_v1",
    }


MODELS = ("judge", "guardrail")
# The right kind of thing for each argument, by its dest: a valid vector to start from.
GOOD = {
    "run_dir": "run",
    "run_dirs": "run",
    "pack": "pack",
    "packs": "pack",
    "labels": "labels",
    "first": "labels",
    "second": "labels",
    "of": "labels",
    "adjudicate": "labels",
    "results": "results",
}
GOOD_VALUES = {
    "judge": "rules",
    "guardrail": "keyword",
    "variants": "original,typo",
    "sample": "3",
    "judge_samples": "1",
    "min_kappa": "0.5",
    "half_width": "0.1",
    "target_recall": "0.8",
    "batch_size": "4",
    "concurrency": "2",
    "labeller": "ana",
    "overlap": "0.5",
}


@st.composite
def argvs(draw: st.DrawFn, places: dict[str, str]) -> list[str]:
    """A valid argument vector for one subcommand, and in most draws one argument changed to something
    odd, out of range, of the wrong kind, or left out."""
    command = draw(st.sampled_from(COMMANDS))
    sub = _subcommands()[command]
    actions = [a for a in sub._actions if not isinstance(a, argparse._HelpAction)]
    odd = draw(st.sampled_from(actions)) if draw(st.integers(0, 3)) else None
    value = st.one_of(
        st.sampled_from(sorted(places.values())),
        odd_text,
        hostile_text,
        st.sampled_from(NUMBERS),
        st.sampled_from(MODEL_NAMES),
    )
    argv = [command]
    for action in actions:
        flag = action.option_strings[0] if action.option_strings else None
        if action is odd and flag is not None and action.dest not in MODELS and draw(st.booleans()):
            continue  # left out (a required one: argparse's usage error)
        if action.nargs == 0:
            argv += [flag] if flag and (action is odd or draw(st.integers(0, 3)) == 0) else []
            continue
        if action is odd:
            given = draw(st.sampled_from(MODEL_NAMES) if action.dest in MODELS else value)
        elif action.dest in MODELS:
            given = GOOD_VALUES[action.dest]  # never the default: the offline judge loads torch
        elif action.dest in GOOD:
            given = places[GOOD[action.dest]]
        elif action.dest in ("out", "output"):
            given = str(Path(places["folder"]) / f"out-{draw(st.integers(0, 10**9))}")
        elif not action.required and flag is not None:
            if action.dest not in GOOD_VALUES or draw(st.booleans()):
                continue  # its default
            given = GOOD_VALUES[action.dest]
        elif action.choices:
            given = sorted(map(str, action.choices))[0]
        else:
            given = GOOD_VALUES.get(action.dest, "x")
        # An option of two values (--adjudicate A B) takes the value drawn twice.
        argv += ([flag] if flag else []) + [given] * (action.nargs if isinstance(action.nargs, int) else 1)
    if command == "audit" and draw(st.booleans()):
        argv.append("--plan")
    return argv


@fuzz(examples=120)
@given(st.data())
def test_every_subcommand_ends_in_a_documented_status_for_any_arguments(capsys, monkeypatch, places, data):
    monkeypatch.setattr(audit, "run_audit", lambda *a, **k: None)  # the labelling screen waits for a person
    monkeypatch.setattr(audit, "run_adjudication", lambda *a, **k: None)  # so does the adjudication's
    monkeypatch.chdir(places["folder"])  # where a command resolves models and writes its cache
    argv = data.draw(argvs(places))
    try:
        code = main(argv)
    except SystemExit as exit:  # argparse: --help (0) or a usage error (4)
        code = exit.code if isinstance(exit.code, int) else 4
    captured = capsys.readouterr()
    event(f"{argv[0]}: exit {code}")
    check_outcome(code, captured.out, captured.err)
    if code == 4:
        assert captured.err.strip(), "a usage error says what is wrong"


class _Config:
    def __init__(self, root: Path, cli: dict[str, Any]) -> None:
        self.rootpath = root
        self.invocation_params = SimpleNamespace(dir=root)
        self.inipath = None
        self._cli = cli

    def getoption(self, name: str) -> Any:
        return self._cli.get(name)

    def getini(self, name: str) -> Any:
        return [] if any(spec.ini_key == name and spec.ini_type == "linelist" for spec in OPTIONS) else ""


OPTION_TEXT = st.one_of(
    odd_text,
    hostile_text,
    st.sampled_from(NUMBERS),
    st.sampled_from(MODEL_NAMES),
    st.sampled_from(["1/2", "tutor=4", "scripted", "child_safety_v1", "nosuch", "2"]),
)


@fuzz(examples=200)
@given(st.dictionaries(st.sampled_from(OPTIONS), OPTION_TEXT, max_size=5))
def test_guardbench_options_give_settings_or_one_error_naming_the_option(options):
    """As pytest hands them over: each value through its option's parser (argparse reports a parser's
    error with the option's name), then the settings built from them."""
    cli: dict[str, Any] = {}
    for spec, text in options.items():
        try:
            value = True if spec.flag else spec.parse(text)
        except argparse.ArgumentTypeError as exc:
            assert SECRET not in str(exc) and PLAIN_SECRET not in str(exc)
            continue
        cli[spec.dest] = [value] if spec.repeatable else value
    with tempfile.TemporaryDirectory() as folder:
        try:
            Settings.from_pytest(_Config(Path(folder), cli))
        except ConfigError as exc:
            event("refused")
            message = str(exc)
            assert any(spec.label in message for spec in options) or "is neither a file" in message, message
            assert SECRET not in message and PLAIN_SECRET not in message and "\n" not in message
            return
    event("accepted")
