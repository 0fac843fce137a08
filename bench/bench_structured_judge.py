"""LLM judge with and without structured output against a real OpenAI-compatible server: how many
verdicts are malformed each way, and how well each agrees with the human labels.

    .venv/bin/python bench/bench_structured_judge.py --base-url http://127.0.0.1:8080/v1 --model smollm2 [--limit 93]

The labelled responses are the test split of pytest_guardbench/datasets/judge_responses_v1.jsonl. Prints the malformed
rate with structured output on and off, and their ratio last.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from pytest_guardbench.settings.model_specs import ModelSpec
from pytest_guardbench.cases.sources import load_judge_labels
from pytest_guardbench.judges.llm_judge import LLMJudge
from pytest_guardbench.judges.quality import measure_judge_quality
from pytest_guardbench.providers import openai_compat_provider

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--limit", type=int, default=93, help="How many test-split rows (default: all 93).")
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()
    labels = [
        label
        for label in load_judge_labels(ROOT / "pytest_guardbench" / "datasets" / "judge_responses_v1.jsonl")
        if label.split == "test"
    ][: args.limit]
    rates = {}
    for mode in ("on", "off"):
        spec = ModelSpec(
            alias=f"judge-{mode}",
            model=args.model,
            base_url=args.base_url,
            structured=mode,
            concurrency=args.concurrency,
            max_retries=1,
            timeout_s=120,
        )
        provider = openai_compat_provider(spec)
        started = time.perf_counter()
        try:
            result = measure_judge_quality(LLMJudge(provider, name=f"structured-{mode}"), labels, 0.6)
        finally:
            provider.close()
        rates[mode] = result["malformed_rate"]
        print(
            f"structured={mode}: {len(labels)} verdicts in {time.perf_counter() - started:.0f} s, malformed {result['malformed_rate']:.3f}, "
            f"safety agreement {result['agreement']}, answer mode agreement {result.get('answer_mode_agreement')}, "
            f"policy label agreement {result.get('policy_label_agreement')}"
        )
    ratio = "n/a" if not rates["off"] else f"{rates['on'] / rates['off']:.3f}"
    print(f"malformed with structured output vs without: {rates['on']:.3f} vs {rates['off']:.3f} (ratio {ratio})")


if __name__ == "__main__":
    main()
