"""The secrets are read once and read again when the environment changes: a key set, replaced or
swapped for another variable mid-run is redacted from the next text on, and one that is gone no
longer blanks out text that merely contains its old value."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_guardbench._util.redact import (
    KEY_SHAPES,
    KEY_VARIABLES,
    MIN_SECRET_LENGTH,
    REDACTED,
    SECRET_NAME,
    Redactor,
    current_redactor,
    redact,
    redact_json,
    treat_as_key,
)

KEY = "sk-live-Qw3rTy8uI0pAs2Df"
OTHER = "tok-Zx9Cv8Bn7Mm6Lk5Jh4"


def test_a_key_added_to_the_environment_mid_run_is_redacted_from_the_next_text(monkeypatch):
    monkeypatch.delenv("GUARDBENCH_TEST_TOKEN", raising=False)
    plain = "the server said tok-Zx9Cv8Bn7Mm6Lk5Jh4 back"
    assert redact(plain) == plain  # no variable holds it yet, and it has no key shape
    monkeypatch.setenv("GUARDBENCH_TEST_TOKEN", OTHER)
    assert redact(plain) == f"the server said {REDACTED} back"


def test_a_replaced_value_and_a_variable_swapped_for_another_of_the_same_count_are_seen(monkeypatch):
    monkeypatch.setenv("GUARDBENCH_TEST_A_TOKEN", "first-secret-value-1")
    monkeypatch.setenv("GUARDBENCH_TEST_FILLER", "x")
    assert redact("first-secret-value-1 and second-secret-value-2") == f"{REDACTED} and second-secret-value-2"
    monkeypatch.setenv("GUARDBENCH_TEST_A_TOKEN", "second-secret-value-2")  # same names, a new value
    assert redact("first-secret-value-1 and second-secret-value-2") == f"first-secret-value-1 and {REDACTED}"
    # One variable gone and another set: as many variables as before, and the new secret is seen.
    monkeypatch.delenv("GUARDBENCH_TEST_FILLER")
    monkeypatch.setenv("GUARDBENCH_TEST_B_SECRET", "third-secret-value-3")
    assert redact("third-secret-value-3") == REDACTED


def test_the_cached_redactor_is_kept_while_the_environment_stays_the_same(monkeypatch):
    monkeypatch.setenv("GUARDBENCH_TEST_TOKEN", OTHER)
    first = current_redactor()
    assert current_redactor() is first
    monkeypatch.setenv("GUARDBENCH_TEST_UNRELATED", "1")
    assert current_redactor() is not first  # any change reads the environment again
    assert OTHER in current_redactor().secrets


def test_extra_values_are_cached_apart_from_the_environment_s_own():
    assert redact(f"a {KEY}", extra=[KEY]) == f"a {REDACTED}"
    assert current_redactor([KEY]) is current_redactor([KEY])
    assert KEY not in current_redactor().secrets


@pytest.mark.parametrize(
    "text",
    ["Authorization: BeArEr abcdef123456", "key sk-abcdefgh12345678 here", "hf_abcdefghij1234", "x\ud83d y"],
)
def test_the_cached_pass_redacts_as_a_fresh_redactor_does(text):
    assert current_redactor()(text) == Redactor()(text)
    assert redact_json({"k": [text]}) == {"k": [Redactor()(text)]}


@given(
    name=st.from_regex(r"[A-Z][A-Z0-9_]{0,20}", fullmatch=True),
    value=st.from_regex(r"[A-Za-z0-9._-]{%d,40}" % MIN_SECRET_LENGTH, fullmatch=True),
    others=st.lists(st.from_regex(r"[A-Z][A-Z0-9_]{0,8}", fullmatch=True), max_size=3),
)
def test_a_variable_listed_as_a_key_is_a_secret_whatever_its_name(name, value, others):
    environ = {name: value, KEY_VARIABLES: " , ".join([*others, name])}
    assert redact(f"reply: {value}!", environ=environ) == f"reply: {REDACTED}!"
    # Without the list, only the name decides.
    unlisted = {name: value}
    assert (REDACTED in redact(f"reply: {value}!", environ=unlisted)) == (
        SECRET_NAME.search(name) is not None or KEY_SHAPES.search(value) is not None
    )


def test_treat_as_key_lists_each_variable_once_and_the_next_text_is_redacted(monkeypatch):
    monkeypatch.delenv(KEY_VARIABLES, raising=False)
    monkeypatch.setenv("VLLM_CRED", "cred-value-12345")
    assert redact("cred-value-12345") == "cred-value-12345"
    treat_as_key(["VLLM_CRED", None, "OTHER_NAME", "VLLM_CRED"])
    treat_as_key(["VLLM_CRED"])
    assert os.environ[KEY_VARIABLES] == "OTHER_NAME,VLLM_CRED"
    assert redact("the cred is cred-value-12345") == f"the cred is {REDACTED}"
