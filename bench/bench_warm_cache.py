"""P2: a pytest run of 1,000 cases x 3 stages over the loopback API with a warm response cache
(`--guardbench-cache=replay`: every answer from the cache, no model call) next to a bare pytest run
of 1,000 trivial parametrized tests (no plugin). Target ratio <= 2.

It first records the cache with a cold run (timed too, for scale), then times the warm run and the
bare run, each as its own `python -m pytest` process, so start-up is counted in both. They take
turns, `--rounds` times each, and the medians are compared: on a small shared machine one run of
either can be 30% off.

Usage: python bench/bench_warm_cache.py [--cases 1000] [--latency 0.05] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _loopback import loopback_server  # noqa: E402
from _projects import write_api_project, write_bare_project  # noqa: E402


def timed(folder: Path, *args: str) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", *args], cwd=folder, capture_output=True, text=True
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"pytest {' '.join(args)} exited {done.returncode}:\n{done.stdout[-3000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project, bare = Path(tmp) / "project", Path(tmp) / "bare"
        project.mkdir()
        bare.mkdir()
        write_api_project(project, args.cases)
        write_bare_project(bare, args.cases)
        with loopback_server(args.latency) as url:
            roles = [
                f"--guardrail=vllm:guard@{url}",
                f"--tutor=vllm:tutor@{url}",
                f"--judge=vllm:judge@{url}",
                "--guardbench-concurrency=32",
                "--guardbench-min-recall=0",
                "--guardbench-max-fpr=1",
            ]
            cold = timed(project, *roles, "--guardbench-cache=write")
        # The server is gone: the warm run can only answer from the cache.
        warms, plains = [], []
        for _ in range(args.rounds):
            warms.append(timed(project, *roles, "--guardbench-cache=replay"))
            plains.append(timed(bare, "-p", "no:guardbench"))
        warm, plain = statistics.median(warms), statistics.median(plains)
        summaries = sorted(project.glob("reports/*/summary.json"))
        execution = json.loads(summaries[-1].read_text())["run"]["execution"]
    print(f"cases: {args.cases} (3 model calls each), server latency {args.latency * 1000:.0f} ms")
    print(f"cold run (records the cache): {cold:.2f} s")
    print(
        f"warm run (--guardbench-cache=replay, server stopped): median {warm:.2f} s of {_runs(warms)}, cache {execution['cache']}"
    )
    print(f"bare pytest, {args.cases} trivial parametrized tests: median {plain:.2f} s of {_runs(plains)}")
    print(f"fastest warm / fastest bare: {min(warms) / min(plains):.2f}")
    print(f"warm / bare (medians): {warm / plain:.2f} (target <= 2)")


def _runs(seconds: list[float]) -> str:
    return ", ".join(f"{s:.2f}" for s in seconds)


if __name__ == "__main__":
    main()
