"""How long the embedded tutor's replies are when nothing cuts them: SmolLM2-135M-Instruct, greedy,
on the prompts of a recorded run that reached the tutor (`tutor_ran`), with a large token limit.
Prints the length distribution and the smallest limit that cuts at most the given share of replies,
and writes the raw lengths as JSON.

Usage: python bench/bench_tutor_reply_lengths.py reports/<run-id> [--limit 1024] [--batch 16]
           [--cut-share 0.10] [--out lengths.json]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

from pytest_guardbench.cases.sources import load_system_prompt
from pytest_guardbench.providers import GenerationParams, ProviderOptions
from pytest_guardbench.providers.smollm2_gguf import smollm2_provider
from pytest_guardbench.settings.model_specs import default_model_cache

ROOT = Path(__file__).resolve().parents[1]


def tutor_prompts(run_dir: Path) -> list[str]:
    """The prompt texts of the run's cases that reached the tutor, in file order."""
    prompts = []
    with (run_dir / "results.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            if record["tutor_ran"]:
                prompts.append(record["prompt_text"])
    return prompts


def smallest_limit(lengths: list[int], cut_share: float) -> int:
    """The smallest token limit that leaves at most `cut_share` of the replies longer than it."""
    ordered = sorted(lengths)
    keep = math.ceil(len(ordered) * (1 - cut_share))  # replies that must fit
    return ordered[keep - 1] if keep else 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--limit", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--cut-share", type=float, default=0.10)
    parser.add_argument("--system-prompt", default="generic_child_tutor_v1")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    prompts = tutor_prompts(args.run_dir)
    system = load_system_prompt(args.system_prompt, ROOT)
    conversations = [[{"role": "system", "content": system}, {"role": "user", "content": p}] for p in prompts]
    provider = smollm2_provider(ProviderOptions(model_cache=default_model_cache(), batch_size=args.batch))
    started = time.perf_counter()
    completions = provider.generate(conversations, GenerationParams(max_new_tokens=args.limit), [None] * len(prompts))
    elapsed = time.perf_counter() - started
    lengths = [c.completion_tokens or 0 for c in completions]
    cut = sum(c.finish_reason == "length" for c in completions)
    ordered = sorted(lengths)

    def quantile(q: float) -> int:
        return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]

    print(f"{len(prompts)} replies, limit {args.limit}: {cut} cut, {sum(lengths)} tokens in {elapsed:.1f} s")
    print("quantiles: " + ", ".join(f"p{round(q * 100)}={quantile(q)}" for q in (0.5, 0.75, 0.8, 0.9, 0.95, 0.99, 1.0)))
    for limit in (64, 96, 128, 160, 192, 224, 256, 320, 384, 512):
        over = sum(n >= limit for n in lengths)  # a reply of exactly `limit` tokens without EOS is cut too
        print(f"  limit {limit:4d}: {over:3d} of {len(lengths)} cut ({over / len(lengths):.1%})")
    # A reply of n tokens plus its EOS fits a limit of n + 1; at n it is cut.
    needed = smallest_limit([n + 1 for n in lengths], args.cut_share)
    print(f"smallest limit cutting <= {args.cut_share:.0%}: {needed}")
    if args.out:
        args.out.write_text(
            json.dumps(
                {
                    "run": args.run_dir.name,
                    "limit": args.limit,
                    "system_prompt": args.system_prompt,
                    "seconds": round(elapsed, 1),
                    "replies": [
                        {"prompt": p, "completion_tokens": c.completion_tokens, "finish_reason": c.finish_reason}
                        for p, c in zip(prompts, completions, strict=True)
                    ],
                },
                indent=1,
            )
            + "\n",
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
