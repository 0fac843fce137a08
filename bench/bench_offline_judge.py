"""Offline judge speed: seconds per 100 responses on this CPU, side by side with the rules judge, and
the ratio to the budget of one second per 100 responses (target: well under 1).

    .venv/bin/python bench/bench_offline_judge.py [--repeats 5]

With the kb extra installed, the `offline-kb` judge is measured too (its word-list and classifier
features on reply and prompt come on top of the offline judge's). Inputs are the 361 responses of pytest_guardbench/datasets/judge_responses_v1.jsonl (their real lengths and prompts);
the MiniLM load is outside the clock, as it happens once per run.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from pytest_guardbench.cases.sources import load_judge_labels
from pytest_guardbench.guards.knowledge import KnowledgeMissing, load_knowledge
from pytest_guardbench.judges.base import Judge, JudgeInput
from pytest_guardbench.judges.rules import RulesJudge
from pytest_guardbench.judges.offline import OfflineJudge, offline_kb_judge
from pytest_guardbench.providers import ProviderOptions, minilm_embedder

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    labels = load_judge_labels(ROOT / "pytest_guardbench" / "datasets" / "judge_responses_v1.jsonl")
    inputs = [
        JudgeInput(prompt=lb.prompt, response=lb.response, source=lb.source, is_harmful=lb.is_harmful) for lb in labels
    ]
    embedder = minilm_embedder(ProviderOptions(model_cache=ROOT))
    judges: dict[str, Judge] = {"offline": OfflineJudge(embedder), "rules": RulesJudge()}
    try:
        judges["offline-kb"] = offline_kb_judge(embedder, load_knowledge())
    except KnowledgeMissing as missing:
        print(f"offline-kb skipped: {missing}")
    per_100 = {}
    for name, judge in judges.items():
        judge.judge(inputs[:16])  # warm-up: first-call allocations
        walls = []
        for _ in range(args.repeats):
            for start in range(0, len(inputs), 100):  # batches of 100, as a run hands them over at most
                chunk = inputs[start : start + 100]
                began = time.perf_counter()
                judge.judge(chunk)
                walls.append((time.perf_counter() - began) * 100 / len(chunk))
        per_100[name] = statistics.median(walls)
        print(f"{name}: {per_100[name]:.3f} s per 100 responses (median of {len(walls)} batches)")
    print(f"offline vs rules: {per_100['offline'] / per_100['rules']:.1f}x")
    print(f"offline vs the 1 s per 100 responses budget: {per_100['offline'] / 1.0:.2f}")
    if "offline-kb" in per_100:
        print(f"offline-kb vs offline: {per_100['offline-kb'] / per_100['offline']:.2f}x")


if __name__ == "__main__":
    main()
