"""Bad option values, one row each: every one is refused by the option's own parser (so argparse names the
option and pytest exits 4) before anything is built. Good values beside them are accepted as they are."""

from __future__ import annotations

import argparse

import pytest

from pytest_guardbench.settings.options import OPTIONS, OPTIONS_BY_NAME

SECONDS = ("max_duration", "timeout", "batch_poll", "progress")
FRACTIONS = (
    "min_recall",
    "max_fpr",
    "max_ber",
    "min_coverage",
    "max_empty_rate",
    "max_flip_rate",
    "scorecard_tolerance",
    "min_judge_kappa",
)
COUNTS = (
    "samples",
    "judge_samples",
    "max_new_tokens",
    "batch_size",
    "api_processes",
    "retries",
    "max_errors",
    "attacker_turns",
)

BAD = [
    *((name, value, "finite") for name in SECONDS for value in ("inf", "Infinity", "1e999")),
    *((name, "nan", "not a number of seconds") for name in SECONDS),
    *((name, value, "negative") for name in SECONDS for value in ("-1", "-0.5", "-inf")),
    *((name, value, "not a number of seconds") for name in SECONDS for value in ("", "soon", "1s", "1,5")),
    *((name, "1e300", "more than a week") for name in SECONDS),
    *((name, "0", "more than 0 seconds") for name in ("timeout", "batch_poll")),
    *((name, value, "not between 0 and 1") for name in FRACTIONS for value in ("nan", "inf", "-0.1", "1.01", "80")),
    *((name, value, "is not a number") for name in FRACTIONS for value in ("", "high", "80%")),
    *((name, value, "not a whole number") for name in COUNTS for value in ("inf", "nan", "1.5", "", "many", "1e3")),
    *((name, "-1", "negative") for name in COUNTS),
    *(
        (name, "0", "at least 1")
        for name in ("samples", "judge_samples", "max_new_tokens", "batch_size", "api_processes", "attacker_turns")
    ),
    *((name, value, "subnormal") for name in (*SECONDS, *FRACTIONS) for value in ("5e-324", "2e-310", "-1e-310")),
    ("max_errors", "1" + "0" * 30, "more than 1,000,000,000"),
    ("attacker_turns", "51", "more than 50"),
    ("samples", "1000000000", "more than 1,000"),
    ("samples", "1001", "more than 1,000"),
    ("retries", "1000000", "more than 100"),
    ("max_new_tokens", "10000000000", "more than 1,000,000"),
    ("batch_size", "100000000", "more than 65,536"),
    ("api_processes", "100000", "more than 1,024"),
    ("concurrency", "1000000000", "more than 100,000"),
    ("concurrency", "0", "at least 1"),
    ("concurrency", "tutor=inf", "not a whole number"),
    ("concurrency", "guard=4", "role must be one of"),
    ("concurrency", ",", "expected N or role=N"),
    ("shard", "0/2", "not i/n"),
    ("shard", "3/2", "not i/n"),
    ("shard", "1/0", "not i/n"),
    ("shard", "1", "not i/n"),
    ("shard", "a/b", "not i/n"),
    ("shard", "-1/2", "not i/n"),
    ("offline", "maybe", "not true or false"),
    ("malformed_policy", "ignore", "not one of"),
    ("mode", "lenient", "not one of"),
    ("cache", "on", "not one of"),
    ("gate_interval", "bootstrap", "not one of"),
]


@pytest.mark.parametrize(("name", "value", "message"), BAD, ids=[f"{n}={v!r}" for n, v, _ in BAD])
def test_a_bad_value_is_refused_by_the_options_parser(name, value, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        OPTIONS_BY_NAME[name].parse(value)


GOOD = [
    ("timeout", "0.3", 0.3),
    ("timeout", "60", 60.0),
    ("progress", "0", 0.0),
    ("max_duration", "604800", 604800.0),
    ("samples", "1000", 1000),
    ("retries", "0", 0),
    ("min_recall", "1", 1.0),
    ("concurrency", "16,tutor=4", {"all": 16, "tutor": 4}),
    ("shard", "2/3", (2, 3)),
    ("offline", "Yes", True),
]


@pytest.mark.parametrize(("name", "value", "parsed"), GOOD, ids=[f"{n}={v!r}" for n, v, _ in GOOD])
def test_a_good_value_is_taken_as_written(name, value, parsed):
    assert OPTIONS_BY_NAME[name].parse(value) == parsed


def test_every_numeric_option_is_in_the_table():
    """A new numeric option joins the table above, so its bad values are tried too."""
    numeric = {
        spec.name
        for spec in OPTIONS
        if spec.parse.__name__ in ("seconds", "positive_seconds", "fraction", "kappa", "count", "positive", "bounded")
    }
    assert numeric == set(SECONDS) | set(FRACTIONS) | set(COUNTS)


@pytest.mark.parametrize("name", [*SECONDS, *FRACTIONS, *COUNTS])
def test_minus_zero_is_read_as_zero_where_zero_is_a_value(name):
    try:
        value = OPTIONS_BY_NAME[name].parse("-0")
    except argparse.ArgumentTypeError as exc:
        assert "at least 1" in str(exc) or "more than 0" in str(exc)
        return
    assert value == 0 and str(value) in ("0", "0.0"), "never -0.0 in a summary or a message"


def test_a_bad_value_on_the_command_line_is_exit_4_naming_the_option(pytester):
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("--guardbench-timeout=inf")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--guardbench-timeout*'inf' is not a finite number of seconds*"])
