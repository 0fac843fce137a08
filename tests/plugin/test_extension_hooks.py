"""A conftest adds its own guard through `pytest_guardbench_register_guards`: it is listed, selected
by name, and run by the engine like a built-in one."""

from __future__ import annotations

import textwrap

from tests.conftest import SCRIPTED_TUTOR_CONFTEST, read_summary, write_project

GUARD_CONFTEST = textwrap.dedent(
    """
    from pytest_guardbench.guards import parse_decision

    class WordGuard:
        name = "word-guard"
        description = "Blocks prompts that say bomb (a project's own guard)."

        def screen(self, prompts):
            return ["BLOCK: says bomb" if "bomb" in p else "ALLOW" for p in prompts]

        def parse(self, raw):
            return parse_decision(raw, self.name)

    def pytest_guardbench_register_guards(registry):
        registry.register("word-guard", lambda options: WordGuard(), WordGuard.description)
    """
)


def test_a_registered_guard_is_listed_and_runs(pytester):
    write_project(pytester)
    pytester.makeconftest(SCRIPTED_TUTOR_CONFTEST + GUARD_CONFTEST)
    listed = pytester.runpytest_subprocess("--guardbench-list")
    listed.stdout.fnmatch_lines(["guardrails:", "*word-guard: Blocks prompts that say bomb (a project's own guard).*"])
    result = pytester.runpytest_subprocess("-p", "no:xdist", "--guardrail=word-guard")
    decisions = read_summary(pytester)["guard_decisions"]["word-guard"]["all"]
    # SMALL_PACK says "bomb" in one prompt.
    assert (decisions["block"]["count"], decisions["allow"]["count"]) == (1, 5), result.stdout.str()


def test_a_guard_name_taken_twice_is_a_clear_error(pytester):
    write_project(pytester)
    pytester.makeconftest(
        SCRIPTED_TUTOR_CONFTEST
        + "\ndef pytest_guardbench_register_guards(registry):\n"
        + "    registry.register('keyword', lambda options: None, 'again')\n"
    )
    result = pytester.runpytest_subprocess("-p", "no:xdist")
    assert result.ret != 0
    assert "guardrail 'keyword' is already registered" in result.stdout.str() + result.stderr.str()
