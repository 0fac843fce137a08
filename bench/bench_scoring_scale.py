"""Scoring and reports at scale: generate N synthetic case records, then time summarise → gate →
write_all, and print wall time and peak RSS (target for 100,000 outcomes: <= 20 s and <= 1 GB).

Usage: python bench/bench_scoring_scale.py [N]
"""

from __future__ import annotations

import random
import resource
import sys
import tempfile
import time
from pathlib import Path

from pytest_guardbench.settings.config import Thresholds
from pytest_guardbench.scoring.gates import evaluate
from pytest_guardbench.scoring.policies import DEFAULT_POLICY, policy_named
from pytest_guardbench.results.artifacts import assemble_summary, write_all
from pytest_guardbench.results.summary import RunSummary
from pytest_guardbench.run.folder import ResultsWriter
from pytest_guardbench.records import Case, CaseRecord, GuardDecision, JudgeVerdict, TutorReply
from pytest_guardbench.scoring.metrics import summarise

VARIANTS = ("original", "typo", "camouflage", "adversarial", "base64", "roleplay")
CATEGORIES = ("Danger", "Sexual", "Profanities", "Hateful", "Self-harm", "Substance use", "Safe control")


def synthetic(n: int, seed: int = 0) -> tuple[list[Case], list[CaseRecord]]:
    rng = random.Random(seed)
    cases, records = [], []
    for i in range(n):
        variant = VARIANTS[i % len(VARIANTS)]
        base = f"p{i // (len(VARIANTS) * 2)}"
        harmful = rng.random() < 0.6
        category = rng.choice(CATEGORIES[:-1]) if harmful else CATEGORIES[-1]
        item = f"{base}-{(i // len(VARIANTS)) % 2}"
        case = Case(case_id=f"bench.{item}.{variant}", pack="bench", item_id=item, base_prompt_id=base, variant=variant,
                    prompt_text="synthetic prompt", is_harmful=harmful, label_source="is_harmful", category=category, source_file="synthetic")  # fmt: skip
        blocked = rng.random() < (0.7 if harmful else 0.1)
        mode = (
            "refused_or_blocked" if blocked else rng.choice(("answered", "answered", "indirect", "refused_or_blocked"))
        )
        records.append(
            CaseRecord.for_case(
                case,
                guard=GuardDecision(
                    guard="g", status="block" if blocked else "allow", reason="", raw="BLOCK" if blocked else "ALLOW"
                ),
                tutor_ran=not blocked,
                response=TutorReply(text="synthetic answer", source="guard_block" if blocked else "tutor", model="m"),
                judge=JudgeVerdict(
                    judge="j", response_safety="unsafe" if rng.random() < 0.05 else "safe", answer_mode=mode, reason="r"
                ),
            )
        )
        cases.append(case)
    return cases, records


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    started = time.perf_counter()
    cases, records = synthetic(n)
    generated = time.perf_counter()
    metrics = summarise(cases, records, policy_named(DEFAULT_POLICY))
    gate = evaluate(metrics, Thresholds())
    scored = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        writer = ResultsWriter(out / "results.jsonl")
        for record in records:
            writer.write(record)
        writer.close()
        summary = assemble_summary(
            metrics,
            gate,
            run={"run_id": "bench"},
            stack={"guardrail": "g", "tutor": "t", "judge": "j", "malformed_policy": "block"},
            selection={},
            thresholds={},
        )
        write_all(out, RunSummary.model_validate(summary), {"cases": n}, {})
    written = time.perf_counter()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"outcomes: {n}")
    print(f"generate records: {generated - started:.2f} s (not counted)")
    print(f"score + gate: {scored - generated:.2f} s")
    print(f"write results.jsonl + reports: {written - scored:.2f} s")
    print(f"peak RSS: {peak_mb:.0f} MB (includes the generated records)")
    print(
        f"scoring and reports: {written - generated:.2f} s, ratio to the 20 s target: {(written - generated) / 20:.2f}"
    )


if __name__ == "__main__":
    main()
