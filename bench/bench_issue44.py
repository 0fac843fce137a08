"""Every ratio of issue 44's "Done when", side by side in one run, with its bar.

One project of N single-turn cases; guard, tutor and judge each call one loopback OpenAI-compatible
server that answers every call after `--latency` seconds (in a process of its own). For each
autoloading mode (`--autoload on`: pytest loads every installed plugin as a user's venv has them;
`off`: only the plugins a run names with -p; `both`, the default), each round runs, as its own
process and in a rotating order:

- the whole command with the default options (no response cache): against the ideal
  N * 3 * latency / concurrency;
- the same options under `-n 2`: against the one process of the same round;
- a replay (`--guardbench-cache=replay`: every answer from the cache, no model call);
- a bare pytest of guardbench's test shape without guardbench (an indirect parameter with two marks and
  three fixtures that do nothing, `bench_fixed_costs.SHAPE`): pytest's floor for one test per case;
- the same bare pytest under `-n 2`: what xdist itself costs for that many tests on this machine,
  printed beside the `-n 2` ratio (no bar: it says how much of that ratio is xdist's own);
- with `--before PATH`, the whole command and the replay again with that checkout's package on
  PYTHONPATH (before and after, phase by phase).

Every run's records and scorecards are checked to be those of the recording run. Then, once, the
finish of `--outcomes` synthetic outcomes (`bench_scoring_scale.py`): its time and peak memory.

Bars: whole <= 1.20x ideal; -n 2 <= 1.10x one process; replay <= 1.25x the bare shape; the finish of
1,000,000 outcomes <= 60 s and <= 2 GB.

Usage: .venv/bin/python bench/bench_issue44.py [--autoload both] [--rounds 5] [--cases 1000]
           [--outcomes 1000000] [--before /path/to/other/checkout]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _loopback import timed_loopback_server  # noqa: E402
from _projects import write_api_project  # noqa: E402
from bench_fixed_costs import SHAPE, Timings, outcomes, phases, summary_of  # noqa: E402


class Runs(Timings):
    """Wall times and phases, and each run's CPU (its process and every process it waited for: call
    processes, xdist workers), which says more than wall time on a machine that others share. `split`:
    each pytest process's own CPU (the controller or only process as "main", workers by id), and the
    test loop's wall time."""

    def __init__(self) -> None:
        super().__init__()
        self.cpus: list[float] = []
        self.splits: list[dict[str, float]] = []

    def shown(self) -> str:
        cpu = f"; CPU median {statistics.median(self.cpus):.2f} s" if self.cpus else ""
        return f"{super().shown()}{cpu}"

    def print_split(self) -> None:
        """Median CPU seconds of each pytest process, whole and within the test loop, and the loop's wall."""
        if not self.splits:
            return
        shown = ", ".join(f"{name} {statistics.median(s[name] for s in self.splits):.2f}" for name in self.splits[0])
        print(f"  CPU by pytest process, from its start (median s): {shown}")


def cpu_split(marks_file: Path, total_cpu: float) -> dict[str, float]:
    """The CPU each pytest process of one run used (`_phases`' .cpu files), in all and in its test loop,
    the rest (each process after its unconfigure mark, and the processes they started: call processes),
    and the controller's test loop wall time."""
    split: dict[str, float] = {}
    for path in sorted(marks_file.parent.glob(f"{marks_file.name}.*.cpu")):
        who = path.name[len(marks_file.name) + 1 : -len(".cpu")]
        data = json.loads(path.read_text())
        cpu, marks = data["cpu"], data["marks"]
        split[who] = cpu["unconfigure"]
        if "test loop" in cpu and "finish" in cpu:
            split[f"{who} in its test loop"] = cpu["finish"] - cpu["test loop"]
        if who == "main":
            split["test loop wall"] = marks["last test done"] - marks["test loop"]
    own = sum(v for k, v in split.items() if " " not in k)
    split["the rest (after unconfigure; call processes)"] = max(0.0, total_cpu - own)
    return split


BARS = {"whole": 1.20, "n2": 1.10, "replay": 1.25, "finish_s": 60.0, "finish_mb": 2048.0}


def environment(autoload: bool, checkout: str | None) -> dict[str, str]:
    """The run's environment: bytecode written and read as on a user's machine, the phases plugin
    importable, and `checkout` (another source tree) ahead of the installed package."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    }
    if not autoload:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    paths = [p for p in (checkout, os.environ.get("PYTHONPATH", ""), str(HERE)) if p]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def pytest_run(folder: Path, env: dict[str, str], *args: str) -> tuple[float, float, dict[str, float]]:
    """The wall time of one pytest process, its CPU (with its children's), and its phases' marks on
    the shared monotonic clock."""
    marks_file = folder / "phases.json"
    for old in (marks_file, *folder.glob("phases.json.*.cpu")):
        old.unlink(missing_ok=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "_phases", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        env={**env, "BENCH_PHASES": str(marks_file)},
    )
    ended = time.monotonic()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(
            f"pytest {' '.join(args)} exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-2000:]}"
        )
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return ended - started, cpu, {"start": started, **json.loads(marks_file.read_text()), "end": ended}


class Mode:
    """The runs of one autoloading mode and their timings."""

    def __init__(self, autoload: bool, before: str | None) -> None:
        self.autoload = autoload
        self.env = environment(autoload, None)
        self.before_env = environment(autoload, before) if before else None
        # With autoloading off a run names the plugins it uses; with it on, naming them again would register them twice.
        self.guardbench = () if autoload else ("-p", "pytest_guardbench.plugin.hooks")
        self.xdist = () if autoload else ("-p", "xdist.plugin")
        self.whole, self.n2, self.replay, self.shape, self.shape_n2 = Runs(), Runs(), Runs(), Runs(), Runs()
        self.before_whole, self.before_replay = Runs(), Runs()

    @property
    def name(self) -> str:
        return "plugins autoloaded, as a user's venv has them" if self.autoload else "plugin autoloading off (-p only)"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--autoload", choices=("both", "on", "off"), default="both")
    parser.add_argument("--outcomes", type=int, default=1_000_000, help="outcomes of the finish (0: skip it)")
    parser.add_argument("--before", help="another checkout whose package is measured too (before and after)")
    args = parser.parse_args()
    ideal = args.cases * 3 * args.latency / args.concurrency
    modes = [Mode(a, args.before) for a in ((True, False) if args.autoload == "both" else (args.autoload == "on",))]
    with tempfile.TemporaryDirectory() as tmp:
        project, shape = Path(tmp) / "project", Path(tmp) / "shape"
        project.mkdir()
        shape.mkdir()
        write_api_project(project, args.cases)
        (shape / "test_shape.py").write_text(SHAPE.format(n=args.cases))
        (shape / "pytest.ini").write_text("[pytest]\nmarkers =\n    guardbench: a case\n    harmless: a safe prompt\n")
        with timed_loopback_server(args.latency) as server:
            url = server.url
            roles = (
                f"--guardrail=vllm:guard@{url}",
                f"--tutor=vllm:tutor@{url}",
                f"--judge=vllm:judge@{url}",
                f"--guardbench-concurrency={args.concurrency}",
                "--guardbench-min-recall=0",
                "--guardbench-max-fpr=1",
            )
            first = modes[0]
            pytest_run(
                project, first.env, *first.guardbench, *roles, "--guardbench-cache=write"
            )  # the replay's answers
            server.calls()
            reference, reference_summary = outcomes(project), summary_of(project)

            def same(what: str) -> None:
                if outcomes(project) != reference or summary_of(project) != reference_summary:
                    raise SystemExit(f"{what}: the records or scorecards differ from the recording run's")

            def steps(mode: Mode) -> list[Callable[[], None]]:
                def whole(env: dict[str, str], into: Runs, what: str) -> Callable[[], None]:
                    def step() -> None:
                        wall, cpu, marks = pytest_run(project, env, *mode.guardbench, *roles, "--guardbench-cache=off")
                        into.walls.append(wall)
                        into.cpus.append(cpu)
                        into.splits.append(cpu_split(project / "phases.json", cpu))
                        into.phases.append(phases(marks, server.calls()))
                        same(what)

                    return step

                def n2() -> None:
                    args_n2 = (*mode.guardbench, *mode.xdist, *roles, "-n", "2", "--guardbench-cache=off")
                    wall, cpu, _ = pytest_run(project, mode.env, *args_n2)
                    mode.n2.walls.append(wall)
                    mode.n2.cpus.append(cpu)
                    mode.n2.splits.append(cpu_split(project / "phases.json", cpu))
                    server.calls()
                    same("-n 2")

                def replay(env: dict[str, str], into: Runs, what: str) -> Callable[[], None]:
                    def step() -> None:
                        wall, cpu, marks = pytest_run(
                            project, env, *mode.guardbench, *roles, "--guardbench-cache=replay"
                        )
                        into.walls.append(wall)
                        into.cpus.append(cpu)
                        into.phases.append(phases(marks, []))
                        if server.calls():
                            raise SystemExit("the replay called the server")
                        same(what)

                    return step

                def bare_shape() -> None:
                    wall, cpu, marks = pytest_run(shape, mode.env)
                    mode.shape.walls.append(wall)
                    mode.shape.cpus.append(cpu)
                    mode.shape.phases.append(phases(marks, []))

                def bare_shape_n2() -> None:
                    wall, cpu, _ = pytest_run(shape, mode.env, *mode.xdist, "-n", "2")
                    mode.shape_n2.walls.append(wall)
                    mode.shape_n2.cpus.append(cpu)

                found = [
                    whole(mode.env, mode.whole, "whole"),
                    n2,
                    replay(mode.env, mode.replay, "replay"),
                    bare_shape,
                    bare_shape_n2,
                ]
                if mode.before_env is not None:
                    found += [
                        whole(mode.before_env, mode.before_whole, "whole (before)"),
                        replay(mode.before_env, mode.before_replay, "replay (before)"),
                    ]
                return found

            order = [step for mode in modes for step in steps(mode)]
            for round_no in range(args.rounds):
                shift = round_no % len(order)
                for step in order[shift:] + order[:shift]:
                    step()
    finish = finish_of(args.outcomes, None) if args.outcomes else None
    finish_before = finish_of(args.outcomes, args.before) if args.outcomes and args.before else None
    report(args, ideal, modes, finish, finish_before)


def finish_of(count: int, checkout: str | None) -> tuple[float, float, float]:
    """The finish of `count` synthetic outcomes (bench_scoring_scale.py, in a process of its own):
    seconds, peak RSS in MB, and the seconds of the read-back a rerun forces."""
    env = environment(False, checkout)
    done = subprocess.run(
        [sys.executable, str(HERE / "bench_scoring_scale.py"), str(count)], capture_output=True, text=True, env=env
    )
    if done.returncode != 0:
        raise SystemExit(f"bench_scoring_scale.py {count} exited {done.returncode}:\n{done.stderr[-2000:]}")
    seconds = re.search(r"score \+ gate \+ write: ([0-9.]+) s", done.stdout)
    peak = re.search(r"peak RSS: ([0-9.]+) MB", done.stdout)
    recount = re.search(r"the read-back a rerun forces .*: ([0-9.]+) s", done.stdout)
    assert seconds is not None and peak is not None and recount is not None, done.stdout
    return float(seconds.group(1)), float(peak.group(1)), float(recount.group(1))


def verdict(value: float, bar: float) -> str:
    return f"(bar <= {bar:g}: {'met' if value <= bar else 'NOT MET'})"


def report(
    args: argparse.Namespace,
    ideal: float,
    modes: list[Mode],
    finish: tuple[float, float, float] | None,
    finish_before: tuple[float, float, float] | None,
) -> None:
    print(
        f"cases: {args.cases} (3 calls each), server latency {args.latency * 1000:.0f} ms, concurrency "
        f"{args.concurrency}, {args.rounds} interleaved rounds; ideal N*3*latency/concurrency {ideal:.2f} s"
    )
    lines = []
    for mode in modes:
        print(f"\n== {mode.name}")
        for label, timings in (
            ("whole command, default options", mode.whole),
            ("before: whole command, default options", mode.before_whole),
            ("replay (--guardbench-cache=replay)", mode.replay),
            ("before: replay", mode.before_replay),
            ("bare pytest of guardbench's test shape", mode.shape),
        ):
            if timings.walls:
                print(f"{label}: {timings.shown()}")
                timings.print_phases()
                timings.print_split()
        print(f"whole command, -n 2, same options: {mode.n2.shown()}")
        mode.n2.print_split()
        print(f"bare pytest of guardbench's test shape, -n 2: {mode.shape_n2.shown()}")
        whole, n2, replay = (
            mode.whole.median / ideal,
            mode.n2.median / mode.whole.median,
            mode.replay.median / mode.shape.median,
        )
        n2_cpu = statistics.median(mode.n2.cpus) / statistics.median(mode.whole.cpus)
        xdist_own = mode.shape_n2.median - mode.shape.median
        replay_cpu = statistics.median(mode.replay.cpus) / statistics.median(mode.shape.cpus)
        lines += [
            f"[{mode.name}] whole / ideal: {whole:.3f} {verdict(whole, BARS['whole'])}",
            f"[{mode.name}] -n 2 / one process, same options: {n2:.3f} {verdict(n2, BARS['n2'])}; CPU {n2_cpu:.3f}",
            f"[{mode.name}]   xdist's own cost for {args.cases} tests of the bare shape: {xdist_own:+.2f} s "
            f"({mode.shape_n2.median / mode.shape.median:.3f}x its one process), against the bar's allowance of "
            f"{(BARS['n2'] - 1) * mode.whole.median:.2f} s over this one process",
            f"[{mode.name}] replay / bare pytest of the same shape: {replay:.3f} {verdict(replay, BARS['replay'])}; "
            f"CPU {replay_cpu:.3f}",
        ]
        if mode.before_whole.walls:
            lines.append(
                f"[{mode.name}] before: whole / ideal {mode.before_whole.median / ideal:.3f}, "
                f"replay / shape {mode.before_replay.median / mode.shape.median:.3f}"
            )
    if finish is not None:
        seconds, peak, recount = finish
        lines.append(
            f"finish of {args.outcomes:,} outcomes: {seconds:.1f} s {verdict(seconds, BARS['finish_s'])}, "
            f"peak {peak:.0f} MB {verdict(peak, BARS['finish_mb'])}; the read-back a rerun forces: {recount:.1f} s"
        )
    if finish_before is not None:
        lines.append(
            f"before: finish of {args.outcomes:,} outcomes: {finish_before[0]:.1f} s, peak {finish_before[1]:.0f} MB; "
            f"the read-back a rerun forces: {finish_before[2]:.1f} s"
        )
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
