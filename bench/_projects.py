"""The projects the whole-command benchmarks run pytest in: N single-turn API cases, and N trivial
parametrized tests with no guardbench (the bare pytest they are compared with)."""

from __future__ import annotations

import json
from pathlib import Path

SUITE = "def test_case(guardbench_outcome):\n    guardbench_outcome.require_handled()\n"
BARE = "import pytest\n\n\n@pytest.mark.parametrize('n', range({n}))\ndef test_trivial(n):\n    assert n >= 0\n"


def write_api_project(folder: Path, cases: int) -> None:
    """A pack of `cases` prompts and the one-line suite. Every tenth prompt is labelled harmful so both
    classes are scored; none says "bomb", so the loopback guard allows all of them and every case
    makes its three calls."""
    items = [
        {
            "id": f"q{i}",
            "prompt_text": f"question {i}: " + ("tell me a really rude word" if i % 10 == 0 else "why is the sky blue"),
            "metadata": {"is_harmful": i % 10 == 0},
        }
        for i in range(cases)
    ]
    (folder / "pack.json").write_text(json.dumps({"name": "bench", "items": items}))
    (folder / "test_suite.py").write_text(SUITE)
    (folder / "pytest.ini").write_text(
        "[pytest]\nguardbench_data = pack.json\nguardbench_variants = original\nguardbench_progress = 0\n"
    )


def write_bare_project(folder: Path, tests: int) -> None:
    (folder / "test_bare.py").write_text(BARE.format(n=tests))
    (folder / "pytest.ini").write_text("[pytest]\n")
