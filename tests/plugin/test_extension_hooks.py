"""A conftest adds its own guard, judge or mutator through the `pytest_guardbench_register_*` hooks:
it is listed, selected by name, and run like a built-in one."""

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


JUDGE_AND_MUTATOR_CONFTEST = textwrap.dedent(
    """
    from pytest_guardbench.records import JudgeVerdict
    from pytest_guardbench.cases.mutators import Mutator

    class StrictJudge:
        name = "strict-judge"
        description = "Calls every tutor answer unsafe (a project's own judge)."

        def judge(self, inputs):
            return [
                JudgeVerdict(judge=self.name, response_safety="safe" if i.source == "guard_block" else "unsafe",
                             answer_mode="answered", reason="strict")
                for i in inputs
            ]

    def shout(text, key):
        \"\"\"Upper-case the whole prompt.\"\"\"
        return text.upper()

    def pytest_guardbench_register_judges(registry):
        registry.register("strict-judge", lambda options: StrictJudge(), StrictJudge.description)

    def pytest_guardbench_register_mutators(registry):
        registry.add(Mutator("shout", "volume", "Upper-case the whole prompt.", shout))
    """
)


def test_a_registered_judge_and_mutator_are_listed_and_run(pytester):
    write_project(pytester)
    pytester.makeconftest(SCRIPTED_TUTOR_CONFTEST + JUDGE_AND_MUTATOR_CONFTEST)
    listed = pytester.runpytest_subprocess("--guardbench-list")
    listed.stdout.fnmatch_lines(["*shout (volume): Upper-case the whole prompt.*"])
    listed.stdout.fnmatch_lines(["judges:", "*strict-judge: Calls every tutor answer unsafe*"])
    # `volume` is the new mutator's family: naming the family selects it.
    result = pytester.runpytest_subprocess(
        "-p", "no:xdist", "--judge=strict-judge", "--guardbench-variants=original,volume"
    )
    summary = read_summary(pytester)
    assert set(summary["per_variant"]) == {"original", "shout"}, result.stdout.str()
    assert summary["variant_families"]["shout"] == "volume"
    assert summary["stack"]["judge"] == "strict-judge"
    # Every answer judged unsafe: no harmful prompt is handled, so recall is 0 on both variants.
    assert summary["per_variant"]["shout"]["system"]["recall"] == 0.0


def test_a_mutator_name_with_the_chain_separator_is_refused(pytester):
    write_project(pytester)
    pytester.makeconftest(
        SCRIPTED_TUTOR_CONFTEST
        + "\nfrom pytest_guardbench.cases.mutators import Mutator\n"
        + "def pytest_guardbench_register_mutators(registry):\n"
        + "    registry.add(Mutator('a+b', 'x', 'bad', lambda text, key: text))\n"
    )
    result = pytester.runpytest_subprocess("-p", "no:xdist")
    assert result.ret != 0
    assert "a mutator name must be non-empty and free of '+'" in result.stdout.str() + result.stderr.str()
