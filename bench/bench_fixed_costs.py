"""Fixed costs of a whole `pytest` command, side by side in one run (issue 36).

One project of N single-turn cases; guard, tutor and judge each call one loopback OpenAI-compatible
server that answers every call after `--latency` seconds. Each round runs, as its own process and
in a rotating order:

- the whole command, single process, no response cache (`--guardbench-cache=off`);
- the same command with `--guardbench-api-processes 2` (the calls made in two call processes that every
  API model shares);
- the same command under `-n 2`;
- a replay (`--guardbench-cache=replay`: every answer from the cache, no model call);
- a bare pytest of N trivial parametrized tests (no guardbench) in the same environment.

Plugin autoloading is off in every run (`PYTEST_DISABLE_PLUGIN_AUTOLOAD=1`): each names the plugins it
uses with `-p`, so plugins that happen to be installed beside it are counted in neither.

It prints the medians and three ratios: the whole command to the ideal N*3*latency/concurrency,
the replay to the bare pytest, and `-n 2` to the single process. The server's timeline splits the
single-process command into the time before the first case call (with the preflight's calls and
the judge probe named), the case calls, and the time from the last answer to the process's exit.
Every run's results are checked to be the same cases with the same verdicts and scores.

Targets (issue 36): whole <= 1.20x ideal at 50 ms, replay <= 1.25x bare, -n 2 <= 1.10x single.

Usage: python bench/bench_fixed_costs.py [--cases 1000] [--latency 0.05] [--concurrency 32] [--rounds 5]
       PYTHONPATH=<other checkout> python bench/bench_fixed_costs.py   # measures that checkout's code
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _loopback import Call, timed_loopback_server  # noqa: E402
from _projects import write_api_project, write_bare_project  # noqa: E402

# The shape of a guardbench test without guardbench: an indirect parameter with two marks, and the
# three fixtures a case's test goes through (slot, record, outcome), each doing nothing. What pytest
# itself costs for that shape, apart from any work of ours.
SHAPE = """import pytest


@pytest.fixture
def slot(request):
    return request.param


@pytest.fixture
def record(slot):
    return slot


@pytest.fixture
def outcome(slot, record):
    return record


CASES = [pytest.param(i, id=f"bench.q{{i}}.original", marks=[pytest.mark.guardbench(pack="bench", variant="original"),
         pytest.mark.harmless]) for i in range({n})]


@pytest.mark.parametrize("slot", CASES, indirect=True)
def test_case(outcome):
    assert outcome >= 0
"""
IMPORTS = "import pytest_guardbench.plugin.hooks"


@dataclass
class Timings:
    walls: list[float] = field(default_factory=list)
    phases: list[dict[str, float]] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.walls)

    def print_phases(self) -> None:
        """Each phase's median, and its share of the median run."""
        for name in self.phases[0]:
            value = statistics.median(p[name] for p in self.phases)
            print(f"  {name}: {value:.3f} s ({value / self.median:.1%})")

    def shown(self) -> str:
        return f"median {self.median:.2f} s of " + ", ".join(f"{w:.2f}" for w in self.walls)


# Only the plugins a run names: the environment this runs in may hold others (hypothesis, syrupy)
# whose per-test hooks would be counted in both the bare pytest and ours. Bytecode is written and
# read as on a user's machine, where an installed package has its .pyc files.
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
GUARDBENCH = ("-p", "pytest_guardbench.plugin.hooks")
XDIST = ("-p", "xdist.plugin")


def run(folder: Path, *args: str) -> tuple[float, dict[str, float]]:
    """The wall time of one pytest process, and its phases' marks on the shared monotonic clock."""
    marks_file = folder / "phases.json"
    marks_file.unlink(missing_ok=True)
    # PYTHONPATH set by the caller (another checkout to measure) stays ahead of the installed package.
    paths = [p for p in (os.environ.get("PYTHONPATH", ""), str(HERE)) if p]
    env = {**ENV, "PYTHONPATH": os.pathsep.join(paths), "BENCH_PHASES": str(marks_file)}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "_phases", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        env=env,
    )
    ended = time.monotonic()
    if done.returncode != 0:
        raise SystemExit(
            f"pytest {' '.join(args)} exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-2000:]}"
        )
    marks = {"start": started, **json.loads(marks_file.read_text()), "end": ended}
    return ended - started, marks


PHASES = (
    ("imports and option parsing (python, pytest, plugins)", "start", "configure"),
    ("configure (settings, inputs, preflight)", "configure", "session start"),
    ("collection and the engine's start", "session start", "test loop"),
    ("test loop", "test loop", "last test done"),
    ("finish (scorecards, run folder)", "finish", "terminal summary"),
    ("terminal summary and unconfigure", "terminal summary", "unconfigure"),
    ("after unconfigure until the process exits", "unconfigure", "end"),
)


def phases(marks: dict[str, float], calls: list[Call]) -> dict[str, float]:
    """A run split by the phases plugin's marks and, when it called the server, by its timeline."""
    split = {name: marks[end] - marks[start] for name, start, end in PHASES}
    if not calls:
        return split
    cases = [c for c in calls if c.kind == "case"]
    for kind in ("preflight", "judge probe"):
        mine = [c for c in calls if c.kind == kind]
        if mine:
            split[f"{kind} calls ({len(mine)}), first arrival to last answer"] = max(c.answered for c in mine) - min(
                c.arrived for c in mine
            )
    first_case, last_answer = min(c.arrived for c in cases), max(c.answered for c in cases)
    split["start until the first case call"] = first_case - marks["start"]
    split["case calls: first arrival to last answer"] = last_answer - first_case
    split["last answer until the last test is done"] = marks["last test done"] - last_answer
    split["last answer until the process exits"] = marks["end"] - last_answer
    return split


def outcomes(project: Path) -> dict[str, tuple[object, ...]]:
    """Each case's verdict and score in the newest run folder: what must not change with the design."""
    newest = max(project.glob("reports/*/results.jsonl"), key=lambda p: p.stat().st_mtime)
    rows = [json.loads(line) for line in newest.read_text().splitlines() if line.strip()]
    found: dict[str, tuple[object, ...]] = {}
    for row in rows:
        judge, guard = row.get("judge") or {}, row.get("guard") or {}
        found[row["case_id"]] = (
            guard.get("status"),
            (row.get("response") or {}).get("text"),
            judge.get("response_safety"),
            judge.get("answer_mode"),
            row.get("error"),
        )
    return found


def summary_of(project: Path) -> dict[str, object]:
    newest = max(project.glob("reports/*/summary.json"), key=lambda p: p.stat().st_mtime)
    summary = json.loads(newest.read_text())
    return {"scorecards": summary["scorecards"], "outcomes": summary["outcomes"]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--api-processes", type=int, default=2, help="--guardbench-api-processes of the extra single-process run"
    )
    args = parser.parse_args()
    ideal = args.cases * 3 * args.latency / args.concurrency
    with tempfile.TemporaryDirectory() as tmp:
        project, bare, shape = Path(tmp) / "project", Path(tmp) / "bare", Path(tmp) / "shape"
        for folder in (project, bare, shape):
            folder.mkdir()
        write_api_project(project, args.cases)
        write_bare_project(bare, args.cases)
        (shape / "test_shape.py").write_text(SHAPE.format(n=args.cases))
        (shape / "pytest.ini").write_text("[pytest]\nmarkers =\n    guardbench: a case\n    harmless: a safe prompt\n")
        with timed_loopback_server(args.latency) as server:
            url = server.url
            roles = [
                f"--guardrail=vllm:guard@{url}",
                f"--tutor=vllm:tutor@{url}",
                f"--judge=vllm:judge@{url}",
                f"--guardbench-concurrency={args.concurrency}",
                "--guardbench-min-recall=0",
                "--guardbench-max-fpr=1",
            ]
            run(project, *GUARDBENCH, *roles, "--guardbench-cache=write")  # records the replay's answers
            server.calls()
            reference, reference_summary = outcomes(project), summary_of(project)
            single, spread, replay, plain, shaped = Timings(), Timings(), Timings(), Timings(), Timings()
            in_call_processes = Timings()
            imports, no_plugin = Timings(), Timings()

            def whole() -> None:
                wall, marks = run(project, *GUARDBENCH, *roles, "--guardbench-cache=off")
                single.walls.append(wall)
                single.phases.append(phases(marks, server.calls()))
                same(project, "single process")

            def with_call_processes() -> None:
                processes = f"--guardbench-api-processes={args.api_processes}"
                wall, marks = run(project, *GUARDBENCH, *roles, "--guardbench-cache=off", processes)
                in_call_processes.walls.append(wall)
                in_call_processes.phases.append(phases(marks, server.calls()))
                same(project, processes)

            def xdist() -> None:
                spread.walls.append(run(project, *GUARDBENCH, *XDIST, *roles, "-n", "2", "--guardbench-cache=off")[0])
                server.calls()
                same(project, "-n 2")

            def replayed() -> None:
                wall, marks = run(project, *GUARDBENCH, *roles, "--guardbench-cache=replay")
                replay.walls.append(wall)
                replay.phases.append(phases(marks, []))
                if server.calls():
                    raise SystemExit("the replay called the server")
                same(project, "replay")

            def bare_run() -> None:
                wall, marks = run(bare)
                plain.walls.append(wall)
                plain.phases.append(phases(marks, []))

            def shape_run() -> None:
                shaped.walls.append(run(shape)[0])

            def imported() -> None:
                for timings, code in ((imports, f"import pytest; {IMPORTS}"), (no_plugin, "import pytest")):
                    started = time.monotonic()
                    subprocess.run([sys.executable, "-c", code], check=True, env=ENV)
                    timings.walls.append(time.monotonic() - started)

            def same(folder: Path, what: str) -> None:
                if outcomes(folder) != reference:
                    raise SystemExit(f"{what}: the records differ from the recording run's")
                got = summary_of(folder)
                if got != reference_summary:
                    raise SystemExit(f"{what}: the scorecards differ from the recording run's")

            order = [whole, with_call_processes, xdist, replayed, bare_run, shape_run, imported]
            for round_no in range(args.rounds):
                shift = round_no % len(order)
                for step in order[shift:] + order[:shift]:
                    step()
    print(
        f"cases: {args.cases} (3 calls each), server latency {args.latency * 1000:.0f} ms, "
        f"concurrency {args.concurrency}, {args.rounds} interleaved rounds"
    )
    print(f"ideal N*3*latency/concurrency: {ideal:.2f} s")
    print(f"whole command, single process: {single.shown()}")
    single.print_phases()
    print(
        f"  of the imports, the plugin's own: {imports.median - no_plugin.median:.3f} s "
        f"(python -c 'import pytest; {IMPORTS}' {imports.median:.3f} s, 'import pytest' {no_plugin.median:.3f} s)"
    )
    print(f"whole command, one process, --guardbench-api-processes={args.api_processes}: {in_call_processes.shown()}")
    in_call_processes.print_phases()
    print(f"whole command, -n 2: {spread.shown()}")
    print(f"replay (--guardbench-cache=replay): {replay.shown()}")
    replay.print_phases()
    print(f"bare pytest, {args.cases} trivial tests: {plain.shown()}")
    plain.print_phases()
    print(
        f"guardbench's test shape without guardbench, {args.cases} tests: {shaped.shown()} "
        f"({shaped.median / plain.median:.3f}x the bare pytest)"
    )
    print(f"whole / ideal: {single.median / ideal:.3f} (target <= 1.20)")
    print(
        f"whole with --guardbench-api-processes={args.api_processes} / ideal: {in_call_processes.median / ideal:.3f} (target <= 1.20)"
    )
    print(f"replay / bare pytest: {replay.median / plain.median:.3f} (target <= 1.25)")
    print(f"-n 2 / single process: {spread.median / single.median:.3f} (target <= 1.10)")


if __name__ == "__main__":
    main()
