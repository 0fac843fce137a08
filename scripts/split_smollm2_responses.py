"""Split the responses of a finished run into the two real-response sets of the offline judge, by a
rule fixed before any response was read or labelled:

- held out (`pytest_guardbench/datasets/judge_audit_smollm2_framing_v2.jsonl`): the `fiction` and `hypothetical`
  variants of about a third of the base prompts (sha256 of "judge-audit-v2/<base prompt id>", first
  byte mod 3 == 0);
- for training (`pytest_guardbench/datasets/judge_responses_smollm2_v2.jsonl`): every other variant of the remaining
  base prompts. No base prompt, and neither framing, appears in both.

The run they came from: `pytest suites/ --guardrail=none --judge=rules
--guardbench-variants=fiction,hypothetical,original,refusal-suppression,prefix-injection` (SmolLM2,
greedy). This script writes unlabelled dumps (case id, prompt, response; no judge's labels); the
labels were then written by hand.

    .venv/bin/python scripts/split_smollm2_responses.py reports/<run-id> OUT_DIR
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

HELD_OUT_VARIANTS = frozenset({"fiction", "hypothetical"})


def held_out(base_prompt_id: str) -> bool:
    return hashlib.sha256(f"judge-audit-v2/{base_prompt_id}".encode()).digest()[0] % 3 == 0


def main() -> int:
    run_dir, out = Path(sys.argv[1]), Path(sys.argv[2])
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines() if line]
    held = [r for r in rows if held_out(r["base_prompt_id"]) and r["variant"] in HELD_OUT_VARIANTS]
    train = [r for r in rows if not held_out(r["base_prompt_id"]) and r["variant"] not in HELD_OUT_VARIANTS]
    out.mkdir(parents=True, exist_ok=True)
    for name, chosen in (("held_out", held), ("train", train)):
        dump = [{"id": r["case_id"], "prompt": r["prompt_text"], "response": r["response"]["text"]} for r in chosen]
        (out / f"{name}.json").write_text(json.dumps(dump, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(rows)} responses: {len(held)} held out, {len(train)} for training")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
