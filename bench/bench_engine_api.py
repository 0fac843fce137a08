"""P1: 1,000 cases x 3 stages (LLM guard, tutor, LLM judge) against a loopback OpenAI-compatible
server that answers after 50 ms, through the engine the plugin uses, at concurrency 32.

Prints the wall time next to the ideal N*3*latency/concurrency (target ratio <= 1.25) and next to
the same calls made one after another (target: >= 30x faster). The sequential run takes about
N*3*latency; --sequential-cases measures fewer cases and scales per case (said so in the output).

Usage: python bench/bench_engine_api.py [--cases 1000] [--concurrency 32] [--latency 0.05] [--sequential-cases 1000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _loopback import loopback_server  # noqa: E402

from pytest_guardbench.engine import run_cases  # noqa: E402
from pytest_guardbench.guards import LLMGuard  # noqa: E402
from pytest_guardbench.judges import LLMJudge  # noqa: E402
from pytest_guardbench.pipeline import Stack, api_limits  # noqa: E402
from pytest_guardbench.providers import GenerationParams  # noqa: E402
from pytest_guardbench.providers.openai_compat import OpenAICompatProvider  # noqa: E402
from pytest_guardbench.schemas import Case  # noqa: E402


def cases(n: int) -> list[Case]:
    # Harmless questions: the guard allows them all, so every case makes all three calls.
    return [
        Case(case_id=f"bench.q{i}.original", pack="bench", item_id=f"q{i}", base_prompt_id=f"q{i}", variant="original",
             prompt_text=f"question {i}: why is the sky blue", is_harmful=False, label_source="is_harmful", category="Safe control", source_file="bench")  # fmt: skip
        for i in range(n)
    ]


def run(url: str, n: int, concurrency: int) -> tuple[float, int]:
    model = OpenAICompatProvider("bench", "bench-model", url, None, concurrency=concurrency, timeout_s=30, max_retries=0)
    limits = api_limits(concurrency)
    stack = Stack(guard=LLMGuard(model), tutor=lambda: model, judge=LLMJudge(model), system_prompt="You are a tutor.",
                  refusal_text="no", malformed_policy="block", params=GenerationParams(max_new_tokens=16),
                  limits={"guard": limits, "tutor": limits, "judge": limits})  # fmt: skip
    started = time.perf_counter()
    records = run_cases(cases(n), stack)
    elapsed = time.perf_counter() - started
    model.close()
    errors = [r for r in records if r.error is not None]
    if errors or any(not r.tutor_ran for r in records):
        raise SystemExit(f"bench run had {len(errors)} errors, e.g. {errors[0].error if errors else 'a blocked case'}")
    return elapsed, model.calls


def client_floor(url: str, calls: int, concurrency: int) -> float:
    """The same number of calls through the provider alone (one gather, no engine, no stages): what
    the official client costs on this machine, which bounds any engine built on it."""
    from pytest_guardbench.providers import GenerationParams as Params

    model = OpenAICompatProvider("floor", "bench-model", url, None, concurrency=concurrency, timeout_s=30, max_retries=0)
    conversations = [[{"role": "user", "content": f"question {i}: why is the sky blue"}] for i in range(calls)]
    model.generate(conversations[:50], Params(max_new_tokens=16), [None] * 50)
    started = time.perf_counter()
    model.generate(conversations, Params(max_new_tokens=16), [None] * calls)
    elapsed = time.perf_counter() - started
    model.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--sequential-cases", type=int, default=1000)
    args = parser.parse_args()
    with loopback_server(args.latency) as url:
        run(url, 20, args.concurrency)  # warm-up: imports, connection pool
        wall, calls = run(url, args.cases, args.concurrency)
        floor = client_floor(url, calls, args.concurrency)
        ideal = args.cases * 3 * args.latency / args.concurrency
        seq_n = min(args.sequential_cases, args.cases)
        seq_wall, seq_calls = run(url, seq_n, 1)
    sequential = seq_wall * args.cases / seq_n
    print(f"cases: {args.cases}, calls: {calls} (3 per case), server latency {args.latency * 1000:.0f} ms, concurrency {args.concurrency}")
    print(f"engine wall time: {wall:.2f} s")
    print(f"ideal N*3*latency/concurrency: {ideal:.2f} s")
    print(f"client floor (the same {calls} calls through the provider alone, no engine): {floor:.2f} s, {floor / calls * 1000:.2f} ms of wall time per call")
    scaled = "" if seq_n == args.cases else f" (measured on {seq_n} cases, scaled per case)"
    print(f"sequential (concurrency 1): {sequential:.2f} s for {args.cases} cases{scaled}, {seq_calls} calls")
    print(f"speed-up over sequential: {sequential / wall:.1f}x (target >= 30x)")
    print(f"engine overhead over the client floor: {wall / floor:.3f}x")
    print(f"ratio to ideal: {wall / ideal:.3f} (target <= 1.25)")


if __name__ == "__main__":
    main()
