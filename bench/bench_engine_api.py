"""P1: 1,000 cases x 3 stages (LLM guard, tutor, LLM judge) against a loopback OpenAI-compatible
server that answers after 50 ms, through the engine the plugin uses, at concurrency 32.

Prints the wall time next to the ideal N*3*latency/concurrency (target ratio <= 1.25) and next to
the same calls made one after another (target: >= 30x faster). The sequential run takes about
N*3*latency; --sequential-cases measures fewer cases and scales per case (said so in the output).

The calls go through `--processes` API call processes (`--guardbench-api-processes`; default here:
one per core) or, with `--processes 1`, through the client in this process.

Usage: python bench/bench_engine_api.py [--cases 1000] [--concurrency 32] [--latency 0.05] [--sequential-cases 1000]
       [--repeats 3] [--processes N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _loopback import loopback_server  # noqa: E402

from pytest_guardbench.settings.model_specs import ModelSpec  # noqa: E402
from pytest_guardbench.run.engine import run_cases  # noqa: E402
from pytest_guardbench.guards import LLMGuard  # noqa: E402
from pytest_guardbench.judges.llm_judge import LLMJudge  # noqa: E402
from pytest_guardbench.run.stages import Stack, api_limits  # noqa: E402
from pytest_guardbench.providers import GenerationParams, Message, openai_compat_provider  # noqa: E402
from pytest_guardbench.records import Case  # noqa: E402


def cases(n: int) -> list[Case]:
    # Harmless questions: the guard allows them all, so every case makes all three calls.
    return [
        Case(
            case_id=f"bench.q{i}.original",
            pack="bench",
            item_id=f"q{i}",
            base_prompt_id=f"q{i}",
            variant="original",
            prompt_text=f"question {i}: why is the sky blue",
            is_harmful=False,
            label_source="is_harmful",
            category="Safe control",
            source_file="bench",
        )
        for i in range(n)
    ]


def provider(url: str, concurrency: int, processes: int) -> Any:
    """The model as a run builds it: in this process, or in call processes of its own."""
    spec = ModelSpec(
        alias="bench",
        model="bench-model",
        base_url=url,
        concurrency=concurrency,
        processes=processes,
        timeout_s=30,
        max_retries=0,
    )
    return openai_compat_provider(spec)


def run(model: Any, n: int, concurrency: int) -> tuple[float, int]:
    """Wall time of n cases through the engine, and the calls they made."""
    limits = api_limits(concurrency)
    stack = Stack(
        guard=LLMGuard(model),
        tutor=lambda: model,
        judge=LLMJudge(model),
        system_prompt="You are a tutor.",
        refusal_text="no",
        malformed_policy="block",
        params=GenerationParams(max_new_tokens=16),
        limits={"guard": limits, "tutor": limits, "judge": limits},
    )
    calls_before = model.stats()["calls"]
    todo = cases(n)  # built before the clock starts: making 1,000 test inputs is not the engine's work
    started = time.perf_counter()
    records = run_cases(todo, stack)
    elapsed = time.perf_counter() - started
    errors = [r for r in records if r.error is not None]
    if errors or any(not r.tutor_ran for r in records):
        raise SystemExit(f"bench run had {len(errors)} errors, e.g. {errors[0].error if errors else 'a blocked case'}")
    return elapsed, model.stats()["calls"] - calls_before


def client_floor(model: Any, calls: int) -> float:
    """The same number of calls through the provider alone (one batch, no engine, no stages): what
    the client costs on this machine, which bounds any engine built on it."""
    conversations: list[list[Message]] = [
        [{"role": "user", "content": f"question {i}: why is the sky blue"}] for i in range(calls)
    ]
    started = time.perf_counter()
    model.generate(conversations, GenerationParams(max_new_tokens=16), [None] * calls)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--sequential-cases", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3, help="engine runs; the median is compared")
    parser.add_argument(
        "--processes",
        type=int,
        default=os.cpu_count() or 1,
        help="API call processes (--guardbench-api-processes); default: one per core",
    )
    args = parser.parse_args()
    with loopback_server(args.latency) as url:
        # One model for the whole measurement, as in a run; the warm-up starts its processes,
        # imports and connection pool.
        model = provider(url, args.concurrency, args.processes)
        run(model, 50, args.concurrency)
        # The median of a few runs: on a small shared machine one run can be 10% off either way.
        walls, calls = [], 0
        for _ in range(args.repeats):
            one_wall, calls = run(model, args.cases, args.concurrency)
            walls.append(one_wall)
        wall = statistics.median(walls)
        floor = client_floor(model, calls)
        model.close()
        ideal = args.cases * 3 * args.latency / args.concurrency
        seq_n = min(args.sequential_cases, args.cases)
        one_at_a_time = provider(url, 1, 1)
        run(one_at_a_time, 2, 1)
        seq_wall, seq_calls = run(one_at_a_time, seq_n, 1)
        one_at_a_time.close()
    sequential = seq_wall * args.cases / seq_n
    print(
        f"cases: {args.cases}, calls: {calls} (3 per case), server latency {args.latency * 1000:.0f} ms, concurrency {args.concurrency}, API call processes {args.processes}"
    )
    print(f"engine wall time: {wall:.2f} s (median of {', '.join(f'{w:.2f}' for w in walls)})")
    print(f"ideal N*3*latency/concurrency: {ideal:.2f} s")
    print(
        f"client floor (the same {calls} calls through the provider alone, no engine): {floor:.2f} s, {floor / calls * 1000:.2f} ms of wall time per call"
    )
    scaled = "" if seq_n == args.cases else f" (measured on {seq_n} cases, scaled per case)"
    print(f"sequential (concurrency 1): {sequential:.2f} s for {args.cases} cases{scaled}, {seq_calls} calls")
    print(f"speed-up over sequential: {sequential / wall:.1f}x (target >= 30x)")
    print(f"engine overhead over the client floor: {wall / floor:.3f}x")
    print(f"ratio to ideal: {wall / ideal:.3f} (target <= 1.25)")


if __name__ == "__main__":
    main()
