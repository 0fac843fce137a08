"""Offline judge speed: seconds per 100 responses on this CPU, side by side with the rules judge, and
the ratio to the budget of one second per 100 responses (target: well under 1).

    .venv/bin/python bench/bench_offline_judge.py [--repeats 5] [--labels FILE]

The relevance check (judges/relevance.py) is measured side by side: the offline judge with it and
without it (`relevance_floor=None`), batch by batch in turn so that a busy machine slows both alike,
and the worst case, where the heads call every reply `answered` and every prompt is embedded (the
judge without it plus the check over every item). It must not double the judge's cost.
With the kb extra installed, the `offline-kb` judge is measured too (its word-list and classifier
features on reply and prompt come on top of the offline judge's). Inputs are the 361 responses of pytest_guardbench/datasets/judge_responses_v1.jsonl (their real lengths and prompts),
or the labels file given;
the MiniLM load is outside the clock, as it happens once per run.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from pytest_guardbench.cases.sources import load_judge_labels
from pytest_guardbench.guards.knowledge import KnowledgeMissing, load_knowledge
from pytest_guardbench.judges.base import Judge, JudgeInput
from pytest_guardbench.judges.rules import RulesJudge
from pytest_guardbench.judges.offline import OfflineJudge, offline_kb_judge
from pytest_guardbench.judges.relevance import relevance
from pytest_guardbench.providers import ProviderOptions, minilm_embedder

ROOT = Path(__file__).resolve().parent.parent


def _timed(call: Callable[[], object]) -> tuple[float, float]:
    """Wall seconds and this process's CPU seconds of one call."""
    began, cpu = time.perf_counter(), time.process_time()
    call()
    return time.perf_counter() - began, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    parser.add_argument(
        "--labels", type=Path, default=ROOT / "pytest_guardbench" / "datasets" / "judge_responses_v1.jsonl"
    )
    args = parser.parse_args()
    labels = load_judge_labels(args.labels)
    inputs = [
        JudgeInput(prompt=lb.prompt, response=lb.response, source=lb.source, is_harmful=lb.is_harmful) for lb in labels
    ]
    embedder = minilm_embedder(ProviderOptions(model_cache=ROOT, torch_threads=args.threads))
    judges: dict[str, Judge] = {
        "offline": OfflineJudge(embedder),
        "offline without the relevance check": OfflineJudge(embedder, relevance_floor=None),
        "rules": RulesJudge(),
    }
    try:
        judges["offline-kb"] = offline_kb_judge(embedder, load_knowledge())
    except KnowledgeMissing as missing:
        print(f"offline-kb skipped: {missing}")
    for judge in judges.values():
        judge.judge(inputs[:16])  # warm-up: first-call allocations
    # Batches of 100, as a run hands them over at most; every judge takes each batch in turn.
    chunks = [inputs[start : start + 100] for start in range(0, len(inputs), 100)]
    names = [*judges, "relevance check over every item"]
    walls: dict[str, list[float]] = {name: [] for name in names}
    cpus: dict[str, list[float]] = {name: [] for name in names}

    def note(name: str, chunk: list[JudgeInput], call: Callable[[], object]) -> None:
        wall, cpu = _timed(call)
        walls[name].append(wall * 100 / len(chunk))
        cpus[name].append(cpu * 100 / len(chunk))

    for _ in range(args.repeats):
        for chunk in chunks:
            for name, judge in judges.items():
                note(name, chunk, lambda: judge.judge(chunk))
            vectors = embedder.embed([item.response.strip() or "(empty)" for item in chunk])
            note("relevance check over every item", chunk, lambda: relevance(chunk, vectors, embedder))
    # CPU seconds of this process are what the ratios are read from: on a shared machine the wall clock
    # also counts the other processes' turns.
    per_100 = {name: statistics.median(times) for name, times in cpus.items()}
    for name in names:
        print(
            f"{name}: {statistics.median(walls[name]):.3f} s wall, {per_100[name]:.3f} s CPU per 100 responses "
            f"(medians of {len(walls[name])} batches)"
        )
    without = per_100["offline without the relevance check"]
    print(f"offline vs rules (CPU): {per_100['offline'] / per_100['rules']:.1f}x")
    print(f"offline vs the 1 s per 100 responses budget (wall): {statistics.median(walls['offline']) / 1.0:.2f}")
    print(f"offline with the relevance check vs without (CPU): {per_100['offline'] / without:.2f}x")
    worst = (without + per_100["relevance check over every item"]) / without
    print(f"worst case, every reply called answered (every prompt embedded; CPU): {worst:.2f}x the judge without it")
    if "offline-kb" in per_100:
        print(f"offline-kb vs offline: {per_100['offline-kb'] / per_100['offline']:.2f}x")


if __name__ == "__main__":
    main()
