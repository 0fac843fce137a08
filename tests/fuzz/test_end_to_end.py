"""A few whole runs (pytester) for what only a whole run shows: a key quoted by every role reaches no
artifact, no cache and no terminal; a run without data, with an unusable table or pack, or without an
extra, ends with exit 4 and one line; a run folder deleted or unwritable mid-run ends with exit 4
naming the path, never "gate passed" before summary.json exists; and shards merge into exactly the
unsharded run's summary.json, timings aside."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from pytest_guardbench.commands.main import main
from tests.conftest import SCRIPTED_TUTOR_CONFTEST, write_project
from tests.fuzz.conftest import SECRET, TRACEBACK

# Every role quotes the key it finds in the environment: the tutor (also the attacker), the guard in
# its raw output and reason, and each member of a judge panel in its reason and raw output.
LEAKY_UNITS = textwrap.dedent(
    """
    import os
    from pytest_guardbench.providers import Completion
    from pytest_guardbench.records import GuardDecision, JudgeVerdict

    def key():
        return os.environ["OPENAI_API_KEY"]

    class LeakyModel:
        name = "leaky"
        model = "leaky-1"

        def generate(self, conversations, params, seeds):
            return [Completion(text=f"I am told the key is {key()}; ask me anything", model=self.model,
                               finish_reason="stop", prompt_tokens=3, completion_tokens=9) for _ in conversations]

    class LeakyGuard:
        name = "leaky-guard"
        description = "Quotes the key in its verdict (tests only)."

        def screen(self, prompts):
            return [f"allow (key {key()})" for _ in prompts]

        def parse(self, raw):
            return GuardDecision(guard=self.name, status="allow", reason=f"my key is {key()}", raw=raw)

    class LeakyJudge:
        description = "Quotes the key in its verdict (tests only)."

        def __init__(self, name, safety):
            self.name, self.safety = name, safety

        def judge(self, inputs):
            return [JudgeVerdict(judge=self.name, response_safety=self.safety, answer_mode="answered",
                                 reason=f"{self.name} saw {key()}", raw=f'{{"key": "{key()}"}}') for _ in inputs]

    def pytest_guardbench_register_providers(registry):
        registry.register("leaky", lambda options: LeakyModel(), "Quotes the key (tests only).")

    def pytest_guardbench_register_guards(registry):
        registry.register("leaky-guard", lambda options: LeakyGuard(), LeakyGuard.description)

    def pytest_guardbench_register_judges(registry):
        for n, safety in ((1, "safe"), (2, "unsafe"), (3, "safe")):
            registry.register(f"leaky{n}", lambda options, n=n, s=safety: LeakyJudge(f"leaky{n}", s), LeakyJudge.description)
    """
)
LENIENT = ("--guardbench-min-recall=0", "--guardbench-max-fpr=1", "-p", "no:randomly")


def _artifacts(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".py"]


def test_a_key_quoted_by_every_role_reaches_no_artifact_no_cache_and_no_terminal(pytester, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    write_project(pytester)
    pytester.makeconftest(LEAKY_UNITS)
    result = pytester.runpytest_subprocess(
        "--tutor=leaky",
        "--guardrail=leaky-guard",
        "--judge=leaky1,leaky2,leaky3",
        "--guardbench-attacker=leaky",
        "--guardbench-attacker-turns=2",
        "--guardbench-cache=write",
        "--junitxml=junit.xml",
        "-rA",
        "-vv",
        *LENIENT,
    )
    [run] = list((pytester.path / "reports").iterdir())
    records = [json.loads(line) for line in (run / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    members = [m for r in records for m in (r["judge"] or {}).get("members", [])]
    attacked = [t for r in records for t in r["turns"] if t.get("attacker")]
    assert members and attacked, "the run had a panel and attack conversations"
    assert all("[REDACTED]" in m["reason"] for m in members)
    assert all("[REDACTED]" in t["attacker"]["text"] for t in attacked)
    files = _artifacts(pytester.path)
    assert {p.name for p in files} >= {"results.jsonl", "summary.json", "report.html", "junit.xml", "cache.sqlite"}
    assert not [p for p in files if SECRET.encode() in p.read_bytes()], "the key reached an artifact or the cache"
    assert SECRET not in result.stdout.str() + result.stderr.str()

    # Rejudged by a panel that quotes it again: the new folder is as clean.
    code = main(["rejudge", str(run), "--judge", "rules"])
    assert code in (0, 1)
    assert not [p for p in _artifacts(run) if SECRET.encode() in p.read_bytes()]


@pytest.mark.parametrize(
    ("pack", "pyproject", "args", "message"),
    [
        (
            {"name": "p", "items": [{"id": "a", "turns": ["hi \ud800"], "metadata": {"is_harmful": False}}]},
            "",
            (),
            "*pack.json: item 0: turns[[]0[]] (U+D800) is a lone UTF-16 surrogate*",
        ),
        (
            {"name": "p", "items": [{"id": "a", "prompt_text": "\u200b\u200b", "metadata": {"is_harmful": False}}]},
            "",
            (),
            "*pack.json: item 0 (id 'a'): prompt_text has no visible character*",
        ),
        (None, "[[tool.guardbench.models]]\nmodel = 'x'\n", (), "*tool.guardbench.models is an array of tables*"),
        (None, '[tool.guardbench.thresholds.turn."²"]\nmin_recall = 0.5\n', (), '*turn."²"[]]: a turn is a depth*'),
        (
            None,
            '[tool.guardbench.thresholds.turn."1"]\nmin_recall = 1.0\n[tool.guardbench.thresholds.turn."01"]\nmin_recall = 0.0\n',
            (),
            "*turn.01[]]: the same turn as '1'*",
        ),
        (
            None,
            "[tool.guardbench.thresholds.variant.original]\nmin_recall = true\n",
            (),
            "*min_recall: Input should be a valid number*",
        ),
        (
            None,
            "",
            ("--guardbench-attacker-turns=3",),
            "*--guardbench-attacker-turns 3: has no effect without --guardbench-attacker*",
        ),
        (None, "", ("--guardbench-data=child_safty_v1",), "*'child_safty_v1' is neither a file nor a shipped name*"),
    ],
    ids=[
        "surrogate-turn",
        "zero-width-prompt",
        "models-array",
        "turn-superscript",
        "turn-1-and-01",
        "bool-bar",
        "attacker-turns-alone",
        "misspelt-pack",
    ],
)
def test_an_unusable_input_is_exit_4_with_one_line(pytester, pack, pyproject, args, message):
    write_project(pytester, pack)
    if pack is not None:  # as JSON writes it: the surrogate as an escape
        (pytester.path / "pack.json").write_text(json.dumps(pack), encoding="utf-8")
    if pyproject:
        (pytester.path / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    result = pytester.runpytest(*args, *LENIENT)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: guardbench: {message}"])
    assert not TRACEBACK.search(result.stdout.str() + result.stderr.str())


@pytest.mark.parametrize("dist", [["-p", "no:xdist"], ["-n", "2"]], ids=["no_xdist", "n2"])
def test_no_data_at_all_is_a_usage_error_not_an_interruption(pytester, dist):
    write_project(pytester)
    pytester.makeini("[pytest]\nguardbench_tutor = scripted\nguardbench_guardrail = none\nguardbench_judge = rules\n")
    result = pytester.runpytest_subprocess(*dist, "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["*guardbench: no prompt data; pass --guardbench-data PATH*"])
    assert not TRACEBACK.search(result.stdout.str() + result.stderr.str())


def test_an_api_tutor_without_the_openai_extra_is_one_line_with_the_pip_line(pytester, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    write_project(pytester)
    # The conftest loads before the plugin configures: as if `openai` were not installed.
    pytester.makeconftest(SCRIPTED_TUTOR_CONFTEST + "\nimport sys\nsys.modules['openai'] = None\n")
    result = pytester.runpytest_subprocess("--tutor=openai:gpt-4o-mini", *LENIENT)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            'ERROR: guardbench: openai:gpt-4o-mini * needs the [[]openai[]] extra *pip install "pytest-guardbench[[]openai[]]"'
        ]
    )
    assert not TRACEBACK.search(result.stdout.str() + result.stderr.str())
    assert not (pytester.path / "reports").exists()


# The reports folder removed after the second case's record; the next record finds its file gone.
REMOVE_MID_RUN = """
import shutil
seen = []

def pytest_runtest_logreport(report):
    if report.when == "call":
        seen.append(report.nodeid)
        if len(seen) == 2:
            shutil.rmtree(report.nodeid and __import__("pathlib").Path(__file__).parent / "reports")
"""
# The run's documents cannot be written: a file-size limit set as the run ends stops a write past 8 KiB
# part-way, as a disk that filled up at the end of the run would (results.jsonl is written by then; the
# limit leaves room for pytest's own output, which pytester keeps in a file too).
FULL_AT_THE_END = """
import resource
import pytest

@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session):
    ran = yield  # every case ran and results.jsonl is written; the run's finish comes next
    resource.setrlimit(resource.RLIMIT_FSIZE, (8192, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    return ran
"""


@pytest.mark.parametrize(
    ("extra", "status", "said", "kept"),
    [
        (REMOVE_MID_RUN, 1, "*reports/*results.jsonl: removed while the run was writing it*", False),
        (
            FULL_AT_THE_END,
            4,
            "*/summary.json: cannot write the run's report (File too large); *results.jsonl keeps the 6 outcome(s)*",
            True,
        ),
    ],
    ids=["reports-removed", "disk-full"],
)
def test_a_run_folder_that_cannot_be_written_names_it_and_never_passes_the_gate(pytester, extra, status, said, kept):
    """Stopped mid-run: a failure (1), as a case whose record cannot be kept; the run finished but its
    report cannot be written: a usage error (4), as a report folder that cannot be written."""
    write_project(pytester)
    pytester.makeconftest(SCRIPTED_TUTOR_CONFTEST + extra)
    result = pytester.runpytest_subprocess("-p", "no:xdist", "-p", "no:cacheprovider", *LENIENT)
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == status, text
    result.stdout.fnmatch_lines([f"guardbench: {said}"])
    assert "gate passed" not in text and "internal error" not in text and not TRACEBACK.search(text)
    runs = list((pytester.path / "reports").iterdir()) if (pytester.path / "reports").exists() else []
    assert not [r for r in runs if (r / "summary.json").exists()], "no summary.json, so no verdict"
    assert not [p for r in runs for p in r.iterdir() if p.name.endswith(".tmp")], "no temporary file is left"
    if kept:
        [run] = runs
        assert len((run / "results.jsonl").read_text(encoding="utf-8").splitlines()) == 6


VOLATILE_RUN_KEYS = ("run_id", "started_at", "finished_at", "duration_s", "merged_from")


def _without_timings(summary: dict) -> dict:
    """summary.json less what depends on time, the run id or where it came from: the `run` block's
    clock and ids, each stage's seconds, and where the judge check was read (the unsharded run
    measured it; the shards after it reuse it)."""
    run = {k: v for k, v in summary["run"].items() if k not in VOLATILE_RUN_KEYS}
    usage = run.get("usage")
    if usage:
        run["usage"] = {**usage, "stages": {s: t["cases"] for s, t in usage["stages"].items()}}
    execution = dict(run.get("execution", {}))
    execution.pop("judge_check", None)
    run["execution"] = execution
    selection = {k: v for k, v in summary["selection"].items() if k not in ("merged_shards", "shard")}
    return {**summary, "run": run, "selection": selection}


def test_shards_merge_into_the_unsharded_summary_timings_aside(pytester):
    write_project(pytester, ini="guardbench_variants = original,typo\n")
    reports = pytester.path / "reports"
    args = ("--guardbench-min-recall=0.5", "--guardbench-max-fpr=0.5", "-p", "no:xdist", "-p", "no:randomly")
    assert pytester.runpytest_subprocess(*args).ret == 0
    [whole] = list(reports.iterdir())
    shards = []
    for index in (1, 2):
        assert pytester.runpytest_subprocess(f"--guardbench-shard={index}/2", *args).ret in (0, 1)
        [new] = [d for d in reports.iterdir() if d != whole and d not in shards]
        shards.append(new)
    merged = pytester.path / "merged"
    assert main(["merge", *map(str, shards), "--out", str(merged)]) == 0
    expected, got = (json.loads((d / "summary.json").read_text(encoding="utf-8")) for d in (whole, merged))
    assert got["run"]["usage"] and got["run"]["execution"]["cases_run"] == expected["run"]["execution"]["cases_run"]
    assert _without_timings(got) == _without_timings(expected)
