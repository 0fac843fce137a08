"""P3: Granite-style Yes/No guard scoring on a tiny local GraniteMoe model built on the spot:
P(Yes) for every prompt from one batched forward pass, next to a generate() call per prompt (the
text path, max_new_tokens as the Granite adapter uses). Target: the batched pass >= 5x faster.

Usage: python bench/bench_guard_scoring.py [--prompts 64] [--batch 16] [--hidden 256] [--layers 4]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_guardbench.providers import ClassifyRequest, ProviderOptions  # noqa: E402
from pytest_guardbench.providers.hf_local import local_scoring_model  # noqa: E402
from tests.providers.test_hf_guards import GRANITE_STYLE_TEMPLATE, WORDS  # noqa: E402
from tests.tiny_models import build_tiny_chat_model  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_tiny_chat_model(
            Path(tmp) / "granite",
            ["Yes", "No", *WORDS],
            GRANITE_STYLE_TEMPLATE,
            arch="granitemoe",
            hidden_size=args.hidden,
            layers=args.layers,
        )
        batched = local_scoring_model(
            "bench", str(folder), ProviderOptions(model_cache=Path(tmp), batch_size=args.batch)
        )
        single = local_scoring_model("bench", str(folder), ProviderOptions(model_cache=Path(tmp), batch_size=1))
        words = "how do i make a bomb why is the sky blue".split()
        conversations = [
            [{"role": "user", "content": " ".join(words[(i + j) % len(words)] for j in range(6 + i % 9))}]
            for i in range(args.prompts)
        ]
        kwargs = {"guardian_config": {"risk_name": "harm"}}
        batched.label_probabilities(conversations[:4], kwargs, ("Yes", "No"))
        single.classify(ClassifyRequest(conversations[:2], kwargs, ("Yes", "No"), max_new_tokens=args.max_new_tokens))

        started = time.perf_counter()
        one_pass = batched.label_probabilities(conversations, kwargs, ("Yes", "No"))
        fast = time.perf_counter() - started
        started = time.perf_counter()
        generated = single.classify(
            ClassifyRequest(conversations, kwargs, ("Yes", "No"), max_new_tokens=args.max_new_tokens)
        )
        slow = time.perf_counter() - started
    agree = max(abs(a - (g.p_first if g.p_first is not None else a)) for a, g in zip(one_pass, generated, strict=True))
    print(f"tiny GraniteMoe: hidden {args.hidden}, {args.layers} layers; {args.prompts} prompts")
    print(f"one forward pass, batches of {args.batch}: {fast:.3f} s ({args.prompts / fast:.0f} prompts/s)")
    print(
        f"generate() per prompt, up to {args.max_new_tokens} new tokens: {slow:.3f} s ({args.prompts / slow:.0f} prompts/s)"
    )
    print(f"largest |P(Yes) difference| between the two paths: {agree:.2e}")
    print(f"speed-up: {slow / fast:.1f}x (target >= 5x)")


if __name__ == "__main__":
    main()
