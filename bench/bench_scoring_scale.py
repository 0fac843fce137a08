"""Scoring and reports at scale: generate N synthetic case records and write them to a results.jsonl
(not timed), then time the finish step over that file: one streaming pass that counts the records
(RunTally) and picks the page's cases, then score + gate + every artifact. Prints wall time and peak
RSS (targets for 1,000,000 outcomes: <= 60 s and <= 2 GB). The finish writes every record again, into a
second folder, as merge and rejudge do; the read-back a rerun forces in a run's own folder (the
records counted again, none written) is timed after it, apart.

Usage: python bench/bench_scoring_scale.py [N]
"""

from __future__ import annotations

import random
import resource
import sys
import tempfile
import time
from pathlib import Path

from collections.abc import Iterator

from pytest_guardbench.records import AnswerMode, Case, CaseRecord, GuardDecision, JudgeVerdict, TutorReply
from pytest_guardbench.runfolder.finish import RunFacts, RunFinish
from pytest_guardbench.document.summary import RunInfo, Selection, StackInfo
from pytest_guardbench.document.read import iter_records
from pytest_guardbench.runfolder.folder import ResultsWriter
from pytest_guardbench.scoring.policies import DEFAULT_POLICY, policy_named
from pytest_guardbench.settings.config import Thresholds

VARIANTS = ("original", "typo", "camouflage", "adversarial", "base64", "roleplay")
CATEGORIES = ("Danger", "Sexual", "Profanities", "Hateful", "Self-harm", "Substance use", "Safe control")


def synthetic(n: int, seed: int = 0) -> Iterator[CaseRecord]:
    rng = random.Random(seed)
    for i in range(n):
        variant = VARIANTS[i % len(VARIANTS)]
        base = f"p{i // (len(VARIANTS) * 2)}"
        harmful = rng.random() < 0.6
        category = rng.choice(CATEGORIES[:-1]) if harmful else CATEGORIES[-1]
        item = f"{base}-{(i // len(VARIANTS)) % 2}"
        case = Case(
            case_id=f"bench.{item}.{variant}",
            pack="bench",
            item_id=item,
            base_prompt_id=base,
            variant=variant,
            prompt_text="synthetic prompt",
            is_harmful=harmful,
            label_source="is_harmful",
            category=category,
            source_file="synthetic",
        )
        blocked = rng.random() < (0.7 if harmful else 0.1)
        modes: tuple[AnswerMode, ...] = ("answered", "answered", "indirect", "refused_or_blocked")
        mode: AnswerMode = "refused_or_blocked" if blocked else rng.choice(modes)
        yield CaseRecord.for_case(
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


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    policy = policy_named(DEFAULT_POLICY)
    thresholds = Thresholds()
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        started = time.perf_counter()
        writer = ResultsWriter(out / "results.jsonl")
        for record in synthetic(n):
            writer.write(record)
        writer.close()
        generated = time.perf_counter()
        generate_peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        # The finish as every writer runs it, into a second folder, reading the records back one at a time.
        rescored = out / "rescored"
        rescored.mkdir()
        finish = RunFinish(rescored, policy, thresholds)
        for record in iter_records(out):
            finish.add(record)
        facts = RunFacts(
            run=RunInfo(run_id="bench", usage=finish.tally.usage({})),
            stack=StackInfo(
                guardrail="g", tutor="t", judge="j", malformed_policy="block", policy="assistant_policy_v2"
            ),
            selection=Selection(),
        )
        summary = finish.summary(facts)
        scored = time.perf_counter()
        finish.write(summary, manifest={"cases": n}, meta=None)
        written = time.perf_counter()
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        # The read-back a rerun forces at the end of a run (RunFinish.summary): the folder's own records
        # counted again, none written. Not part of the bar; said for the cost of that path alone.
        recount = RunFinish(out, policy, thresholds, write_records=False)
        for record in iter_records(out):
            recount.add(record)
        recounted = time.perf_counter()
    print(f"outcomes: {n}")
    print(
        f"generate and write results.jsonl: {generated - started:.2f} s (not counted; peak RSS by then {generate_peak_mb:.0f} MB)"
    )
    print(f"read + score + gate: {scored - generated:.2f} s")
    print(f"write reports: {written - scored:.2f} s")
    print(f"peak RSS: {peak_mb:.0f} MB")
    print(f"score + gate + write: {written - generated:.2f} s (target <= 60 s for 1,000,000; <= 2,048 MB)")
    print(f"the read-back a rerun forces (read and count, nothing written): {recounted - written:.2f} s")


if __name__ == "__main__":
    main()
