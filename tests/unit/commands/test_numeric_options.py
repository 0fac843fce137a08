"""Plans and numeric options validated as inputs: every numeric option of every command refuses
out-of-range, tiny, huge and non-finite values with exit 4 naming the option, and a plan over a run
with nothing to plan is exit 4 with one line (not a plan over "0 judged cases")."""

from __future__ import annotations

import argparse
import json
import math
import sys

import pytest

from pytest_guardbench.commands.main import build_parser, main
from pytest_guardbench.runfolder.folder import ResultsWriter
from tests.builders import record
from tests.fuzz.runs import write_run

# Values no numeric option means: NaN, the infinities, past any float, a subnormal, a 31-digit count.
HOSTILE = ("nan", "NaN", "inf", "-inf", "Infinity", "1e308", "1e999", "5e-324", "2e-310", "1" + "0" * 30)
# Text a parser takes for a number that is one: -0 is 0.
SIGNED_ZERO = "-0"


def _numeric_actions() -> list[tuple[str, argparse.Action]]:
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found = []
    for name, command in commands.choices.items():
        for action in command._actions:
            kind = getattr(action.type, "__name__", "")
            if action.type is not None and kind not in ("Path", "_name", "str"):
                found.append((name, action))
    return found


NUMERIC = _numeric_actions()


def test_the_numeric_options_are_all_found():
    """A new numeric option of a command is found here by its type, so the rows below try it too."""
    named = {(name, action.option_strings[0]) for name, action in NUMERIC}
    assert {
        ("audit", "--half-width"),
        ("audit", "--sample"),
        ("correct", "--min-kappa"),
        ("screen", "--concurrency"),
    } <= named
    assert len(named) >= 11


@pytest.mark.parametrize("value", HOSTILE)
@pytest.mark.parametrize(("command", "action"), NUMERIC, ids=[f"{n} {a.option_strings[0]}" for n, a in NUMERIC])
def test_a_value_no_option_means_is_refused_or_taken_as_a_plain_number(command, action, value):
    try:
        parsed = action.type(value)  # type: ignore[misc]
    except (argparse.ArgumentTypeError, ValueError, TypeError):
        return  # argparse names the option (exit 4): tried end to end below
    # The only values a parser may take from these: a seed of 31 digits (any whole number seeds).
    assert action.dest == "seed" and isinstance(parsed, int), f"{command} {action.option_strings[0]} took {value!r}"


@pytest.mark.parametrize(("command", "action"), NUMERIC, ids=[f"{n} {a.option_strings[0]}" for n, a in NUMERIC])
def test_minus_zero_is_zero_where_it_is_taken(command, action):
    try:
        parsed = action.type(SIGNED_ZERO)  # type: ignore[misc]
    except (argparse.ArgumentTypeError, ValueError, TypeError):
        return
    assert parsed == 0 and math.copysign(1, parsed) == 1, "a -0 reaches no message or summary"


@pytest.fixture
def run_dir(tmp_path):
    return write_run(tmp_path / "run")


@pytest.mark.parametrize(
    "value", ["1e-200", "1e-160", "0.0009", "0", "-0", "nan", "inf", "1e308", "5e-324", "0.5", "1", "x"]
)
def test_a_plan_half_width_no_plan_can_meet_is_exit_4_naming_the_option(run_dir, capsys, value):
    with pytest.raises(SystemExit) as exited:
        main(["audit", str(run_dir), "--plan", f"--half-width={value}"])
    assert exited.value.code == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert "argument --half-width: " in err[-1] and "Traceback" not in "".join(err)


def test_the_narrowest_half_width_still_plans(run_dir, capsys):
    assert main(["audit", str(run_dir), "--plan", "--half-width=0.001"]) == 0
    out = capsys.readouterr().out
    assert "half-width 0.001" in out and "nan" not in out.lower()


def _folder_of(tmp_path, records):
    folder = tmp_path / "some-run"
    folder.mkdir()
    writer = ResultsWriter(folder / "results.jsonl")
    for made in records:
        writer.write(made)
    writer.close()
    (folder / "results.jsonl").touch()  # an empty run's file, which a writer given nothing leaves out
    (folder / "summary.json").write_text(json.dumps({"metric_definitions": {"policy": "assistant_policy_v2"}}))
    return folder


@pytest.mark.parametrize(
    ("records", "said"),
    [
        ([], "no case, so no audit to plan"),
        (
            [record(f"e{n}.original", n % 2 == 0, error=True) for n in range(4)],
            "no reply to label, so no audit to plan (4 cases: 4 failed before their reply)",
        ),
    ],
    ids=["empty run", "every case errored"],
)
def test_a_plan_over_nothing_to_plan_is_exit_4_in_one_line(tmp_path, capsys, records, said):
    folder = _folder_of(tmp_path, records)
    assert main(["audit", str(folder), "--plan"]) == 4
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == f"guardbench audit: {folder}: {said}"


def test_huge_and_tiny_values_of_the_commands_are_exit_4_end_to_end(run_dir, capsys):
    # The numeric option last, each time.
    for argv in (
        ["audit", str(run_dir), "--labeller", "a", "--sample", "1" + "0" * 30],
        ["audit", str(run_dir), "--labeller", "b", "--overlap", "5e-324"],
        ["correct", str(run_dir), "--labels", "x.jsonl", "--min-kappa", "2e-310"],
        ["judge-quality", "x.jsonl", "--judge", "rules", "--min-kappa", "nan"],
        ["screen", "x.json", "--guardrail", "keyword", "--target-recall", "1e-320"],
    ):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 4, argv
        assert f"argument {argv[-2]}: " in capsys.readouterr().err, argv


def test_the_subnormal_check_is_the_floats_own_boundary():
    from pytest_guardbench.settings.option_values import real_number

    assert real_number(repr(sys.float_info.min)) == sys.float_info.min
    with pytest.raises(argparse.ArgumentTypeError, match="subnormal"):
        real_number(repr(sys.float_info.min / 2))
