"""Compare two run folders key by key, timings aside: summary.json, results.jsonl and
variant_metrics.csv. For changes that must leave a run's measurements as they were (a refactor):

    .venv/bin/python scripts/same_artifacts.py reports/<before> reports/<after> [--ignore-key judge_id]

Prints every differing key path and exits 1 when any differs, 0 when the folders agree."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

# Keys whose values depend on the clock, the run id or the machine, never on what was measured.
VOLATILE = {
    "run_id",
    "started_at",
    "finished_at",
    "duration_s",
    "computed_at",
    "timings_s",
    "p50_s",
    "p95_s",
    "total_s",
    "path",
    "reused",
}


def differences(before: Any, after: Any, where: str, ignored: set[str]) -> list[str]:
    if isinstance(before, dict) and isinstance(after, dict):
        found = []
        for key in sorted(set(before) | set(after)):
            if key in VOLATILE or key in ignored:
                continue
            if key not in before or key not in after:
                found.append(f"{where}.{key}: only in {'after' if key not in before else 'before'}")
                continue
            found += differences(before[key], after[key], f"{where}.{key}", ignored)
        return found
    if isinstance(before, list) and isinstance(after, list):
        if len(before) != len(after):
            return [f"{where}: {len(before)} items before, {len(after)} after"]
        return [
            d
            for i, (b, a) in enumerate(zip(before, after, strict=True))
            for d in differences(b, a, f"{where}[{i}]", ignored)
        ]
    return [] if before == after else [f"{where}: {before!r} != {after!r}"]


def records(folder: Path) -> dict[str, Any]:
    rows = (
        json.loads(line) for line in (folder / "results.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()
    )
    return {row["case_id"]: row for row in rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--ignore-key", action="append", default=[], help="a key to leave out wherever it occurs")
    args = parser.parse_args()
    ignored = set(args.ignore_key)
    found = differences(
        json.loads((args.before / "summary.json").read_text(encoding="utf-8")),
        json.loads((args.after / "summary.json").read_text(encoding="utf-8")),
        "summary",
        ignored,
    )
    found += differences(records(args.before), records(args.after), "results", ignored)
    csv_before = (args.before / "variant_metrics.csv").read_text(encoding="utf-8")
    if csv_before != (args.after / "variant_metrics.csv").read_text(encoding="utf-8"):
        found.append("variant_metrics.csv differs")
    for line in found:
        print(line)
    print(f"{len(found)} difference(s) between {args.before} and {args.after}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
