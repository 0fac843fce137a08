"""Measure the coverage of the corrected 95% intervals in every named setting at length, the long
form of tests/unit/audit/test_coverage_settings.py: {main-job-shaped, typical} single-prompt runs under
{random, stratified}, and a run of conversations under {cluster}; x {30, 60, 120} labels; x {rules-like,
offline-like, unscored-mishandled, wrong-cell} judges (tests/unit/audit/coverage_sim.py says what each
is). Prints a markdown table: per setting and metric, the audits whose interval held the truth, the
coverage with its binomial standard error, and the mean width; then the lowest coverage seen.

    .venv/bin/python scripts/measure_coverage.py --audits 4000 > coverage.md

Statistical and seeded: the same --audits and --seed give the same table on any machine."""

from __future__ import annotations

import argparse
import datetime
import math
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.unit.audit.coverage_sim import SweepRow, sweep  # noqa: E402


def compact(rows: list[SweepRow]) -> list[str]:
    """The lowest coverage of any metric, per setting: run x design x judge by labels."""
    sizes = sorted({row[3] for row in rows})
    lowest: dict[tuple[str, str, str], dict[int, float]] = {}
    for run, judge, design, n, _, tally in rows:
        cell = lowest.setdefault((run, design, judge), {})
        cell[n] = min(cell.get(n, 1.0), tally.rate)
    lines = [
        "| run | design | judge | " + " | ".join(f"{n} labels" for n in sizes) + " |",
        "|---|---|---|" + "---|" * len(sizes),
    ]
    for (run, design, judge), by_size in lowest.items():
        lines.append(f"| {run} | {design} | {judge} | " + " | ".join(f"{by_size[n]:.3f}" for n in sizes) + " |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--audits", type=int, default=4000, help="Audits per setting (default 4000).")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    started = datetime.datetime.now(datetime.UTC)
    print(
        f"{args.audits} audits per setting, seed {args.seed}; {started:%Y-%m-%d}, "
        f"{platform.machine()} {platform.processor() or ''} Python {platform.python_version()}".replace("  ", " ")
    )
    print()
    print("| run | judge | design | labels | metric | held | coverage (± 1 se) | mean width |")
    print("|---|---|---|---|---|---|---|---|")

    def show(row: SweepRow) -> None:
        run, judge, design, n, metric, tally = row
        se = math.sqrt(tally.rate * (1 - tally.rate) / tally.defined) if tally.defined else float("nan")
        print(
            f"| {run} | {judge} | {design} | {n} | {metric} | {tally.covered}/{tally.defined} "
            f"| {tally.rate:.3f} ± {se:.3f} | {tally.mean_width:.3f} |",
            flush=True,
        )

    rows = sweep(args.audits, args.seed, progress=show)
    print()
    print(*compact(rows), sep="\n")
    worst = min(rows, key=lambda row: row[5].rate)
    sparse = [row[5] for row in rows if row[2] == "random"]
    missed = sum(t.sparse for t in sparse)
    held = sum(t.sparse_covered for t in sparse)
    print()
    print(f"lowest coverage: {worst[5].rate:.3f} ({', '.join(map(str, worst[:5]))})")
    if missed:
        print(f"random-design audits whose labels missed a verdict cell: {held}/{missed} held ({held / missed:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
