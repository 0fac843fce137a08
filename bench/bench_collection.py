"""Collection of a 5,000-item pack (guardbench: load, validate, expand, parametrise; `--collect-only`)
next to a bare pytest collecting 5,000 trivial parametrized tests. The fault catalogue's bar is
collection under 5 s; the ratio says what the plugin adds. Each side runs as its own `python -m
pytest` process (start-up counted in both), `--rounds` times, and the medians are compared.

Usage: python bench/bench_collection.py [--items 5000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _projects import BARE, SUITE  # noqa: E402


def timed(folder: Path, expected: int) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "--collect-only"],
        cwd=folder,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0 or f"{expected} tests collected" not in done.stdout:
        raise SystemExit(f"collection in {folder} failed ({done.returncode}):\n{done.stdout[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ours, bare = Path(tmp) / "guardbench", Path(tmp) / "bare"
        ours.mkdir()
        bare.mkdir()
        items = [
            {
                "id": f"p{i:05d}",
                "prompt_text": f"question {i}: why is the sky blue",
                "metadata": {"is_harmful": i % 2 == 0, "category": "Danger"},
            }
            for i in range(args.items)
        ]
        (ours / "pack.json").write_text(json.dumps({"name": "big", "items": items}))
        (ours / "test_suite.py").write_text(SUITE)
        (ours / "pytest.ini").write_text(
            "[pytest]\nguardbench_data = pack.json\nguardbench_variants = original\nguardbench_judge = rules\nguardbench_guardrail = keyword\n"
        )
        (bare / "test_bare.py").write_text(BARE.format(n=args.items))
        (bare / "pytest.ini").write_text("[pytest]\n")
        ours_s, bare_s = [], []
        for _ in range(args.rounds):
            ours_s.append(timed(ours, args.items))
            bare_s.append(timed(bare, args.items))
    o, b = statistics.median(ours_s), statistics.median(bare_s)
    print(
        f"guardbench --collect-only, {args.items} items: median {o:.2f} s (runs {', '.join(f'{t:.2f}' for t in ours_s)})"
    )
    print(
        f"bare pytest --collect-only, {args.items} tests: median {b:.2f} s (runs {', '.join(f'{t:.2f}' for t in bare_s)})"
    )
    print(f"bar: guardbench collection < 5 s: {'met' if o < 5 else 'MISSED'}")
    print(f"ratio guardbench/bare: {o / b:.2f}")


if __name__ == "__main__":
    main()
