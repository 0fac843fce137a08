"""The embedded tutor's greedy generation, old setup next to new, in one run on the same loaded model:
`generate` on left-padded batches (the old setup, still the sampled path) against the shared-prefix,
shrinking-batch greedy loop (`HFChatProvider._greedy`). Prompts: those of a recorded run that reached
the tutor (`tutor_ran`), with its system prompt. Prints both wall times, their ratio, how many replies
are identical, and the cut-off share under each.

Usage: python bench/bench_tutor_generation.py reports/<run-id> [--max-new-tokens 256] [--batch 16]
           [--prompts N] [--repeat 1]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from bench_tutor_reply_lengths import tutor_prompts  # type: ignore[import-not-found]

from pytest_guardbench.cases.sources import load_system_prompt
from pytest_guardbench.providers import Completion, GenerationParams, ProviderOptions
from pytest_guardbench.providers.smollm2_gguf import smollm2_provider
from pytest_guardbench.settings.model_specs import default_model_cache

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--prompts", type=int, default=0, help="only the first N prompts (0: all)")
    parser.add_argument("--repeat", type=int, default=1, help="alternate old and new this many times")
    args = parser.parse_args()
    prompts = tutor_prompts(args.run_dir)[: args.prompts or None]
    system = load_system_prompt("generic_child_tutor_v1", ROOT)
    conversations = [[{"role": "system", "content": system}, {"role": "user", "content": p}] for p in prompts]
    provider = smollm2_provider(ProviderOptions(model_cache=default_model_cache(), batch_size=args.batch))
    params = GenerationParams(max_new_tokens=args.max_new_tokens)
    rendered = [provider.render(c) for c in conversations]

    def old() -> list[Completion]:
        # The previous greedy path: length-sorted batches through `model.generate`, left-padded.
        order = sorted(range(len(rendered)), key=lambda i: len(rendered[i]))
        replies: list[Completion | None] = [None] * len(rendered)
        for start in range(0, len(order), args.batch):
            chunk = order[start : start + args.batch]
            for i, reply in zip(
                chunk, provider._generate_batch([rendered[i] for i in chunk], params, None), strict=True
            ):
                replies[i] = reply
        return [r for r in replies if r is not None]

    def new() -> list[Completion]:
        return provider.generate(conversations, params, [None] * len(conversations))

    provider.generate(conversations[:2], GenerationParams(max_new_tokens=4), [None, None])  # warm-up
    seconds: dict[str, float] = {"old": 0.0, "new": 0.0}
    replies: dict[str, list[Completion]] = {}
    print(f"load before: {os.getloadavg()[0]:.2f}")
    for _ in range(args.repeat):
        for label, run in (("old", old), ("new", new)):
            started = time.perf_counter()
            replies[label] = run()
            seconds[label] += time.perf_counter() - started
    print(f"load after: {os.getloadavg()[0]:.2f}")
    for label in ("old", "new"):
        cut = sum(c.finish_reason == "length" for c in replies[label])
        tokens = sum(c.completion_tokens or 0 for c in replies[label])
        print(
            f"{label}: {len(prompts)} replies, {tokens} tokens, {cut} cut at {args.max_new_tokens} "
            f"({cut / len(prompts):.1%}), {seconds[label] / args.repeat:.1f} s"
        )
    same = sum(a.text == b.text and a.finish_reason == b.finish_reason for a, b in zip(replies["old"], replies["new"]))
    print(f"identical replies: {same} of {len(prompts)}")
    print(f"speed-up new vs old: {seconds['old'] / seconds['new']:.2f}x")


if __name__ == "__main__":
    main()
