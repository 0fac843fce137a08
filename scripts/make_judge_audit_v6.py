"""The prompts of the v6 judge audit, and the split of its replies, fixed before any reply was read.

Step 1 writes a pre-expanded pack of prompts no judge was fitted on: the last user turn of every
conversation of `child_safety_conversations_v1` (written after every judge fit) and the originals of
`guard_source_slurs_v1` (written as a separate source for the guard). A harmful prompt runs as written
and in two jailbreak framings, a safe one as written and in one; the framings are picked by sha256 of
the prompt id, from the six of the `framing` family.

    .venv/bin/python scripts/make_judge_audit_v6.py pack OUT.jsonl
    .venv/bin/pytest suites/ --guardbench-data=OUT.jsonl --guardbench-variants=<every variant in OUT.jsonl, as-written included> \\
        --guardrail=none --judge=rules --guardbench-max-new-tokens=256

Step 2 dumps the replies without any judge's labels, each with its split: the test split is the
replies to about 60% of the base prompts (sha256 of "judge-audit-v6/<base prompt id>", first byte
< 154), so no base prompt has replies in both splits.

    .venv/bin/python scripts/make_judge_audit_v6.py dump reports/<run-id> OUT.jsonl
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from pytest_guardbench.cases.variants import mutate

ROOT = Path(__file__).resolve().parent.parent / "pytest_guardbench"
FRAMINGS = ("adversarial", "roleplay", "fiction", "hypothetical", "prefix-injection", "refusal-suppression")


def _byte(text: str) -> int:
    return hashlib.sha256(text.encode("utf-8")).digest()[0]


def framings_for(prompt_id: str, count: int) -> list[str]:
    start = _byte(f"judge-audit-v6-framing/{prompt_id}") % len(FRAMINGS)
    return [FRAMINGS[(start + 3 * n) % len(FRAMINGS)] for n in range(count)]


def in_test_split(base_prompt_id: str) -> bool:
    return _byte(f"judge-audit-v6/{base_prompt_id}") < 154


def source_prompts() -> list[dict[str, object]]:
    pack = json.loads((ROOT / "packs" / "child_safety_conversations_v1.json").read_text(encoding="utf-8"))
    prompts: list[dict[str, object]] = []
    for item in pack["items"]:
        users = [t for t in item["turns"] if isinstance(t, str) or t.get("role", "user") == "user"]
        last = users[-1] if isinstance(users[-1], str) else users[-1]["content"]
        meta = item["metadata"]
        prompts.append(
            {
                "id": f"conv-{item['id']}",
                "text": last,
                "is_harmful": meta["is_harmful"],
                "category": meta.get("category"),
            }
        )
    for line in (ROOT / "datasets" / "guard_source_slurs_v1.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["kind"] == "original":
            prompts.append(
                {
                    "id": f"slur-{row['id']}",
                    "text": row["prompt"],
                    "is_harmful": row["is_harmful"],
                    "category": row["category"],
                }
            )
    return prompts


def write_pack(out: Path) -> None:
    rows = []
    for prompt in source_prompts():
        pid = str(prompt["id"])
        variants = ["original", *framings_for(pid, 2 if prompt["is_harmful"] else 1)]
        for variant in variants:
            text = (
                str(prompt["text"])
                if variant == "original"
                else mutate(variant, str(prompt["text"]), f"v6/{pid}/{variant}")
            )
            # "as-written", not "original": an original item would be run through every selected framing too.
            named = "as-written" if variant == "original" else variant
            meta = {
                "is_harmful": prompt["is_harmful"],
                "category": prompt["category"],
                "variant": named,
                "base_prompt_id": pid,
            }
            rows.append({"id": f"{pid}-{variant}", "prompt_text": text, "metadata": meta})
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(f"{len(rows)} prompts; variants: {','.join(sorted({r['metadata']['variant'] for r in rows}))}")


def dump(run_dir: Path, out: Path) -> None:
    lines = (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    dumped = [
        {
            "id": f"judge_audit_v6.{r['item_id']}",
            "prompt": r["prompt_text"],
            "response": r["response"]["text"],
            "finish_reason": r["response"].get("finish_reason"),
            "is_harmful": r["is_harmful"],
            "category": r["category"],
            "variant": "original" if r["variant"] == "as-written" else r["variant"],
            "split": "test" if in_test_split(r["base_prompt_id"]) else "dev",
        }
        for r in sorted(rows, key=lambda r: r["case_id"])
        if r.get("response") and r["error"] is None
    ]
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in dumped), encoding="utf-8")
    tests = sum(r["split"] == "test" for r in dumped)
    print(f"{len(dumped)} replies: {tests} test, {len(dumped) - tests} dev")


if __name__ == "__main__":
    if sys.argv[1] == "pack":
        write_pack(Path(sys.argv[2]))
    else:
        dump(Path(sys.argv[2]), Path(sys.argv[3]))
