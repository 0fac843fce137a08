"""`guardbench expand`: the expanded pack round-trips through the loader into the same cases."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pytest_guardbench.commands.main import main
from pytest_guardbench.settings.config import MINORBENCH_HARMFUL_CATEGORIES
from pytest_guardbench.cases.sources import load_sources
from pytest_guardbench.cases.variants import expand

PACK = Path(__file__).resolve().parents[3] / "pytest_guardbench" / "packs" / "child_safety_v1.json"
VARIANTS = ("original", "typo", "encoding", "typo+camouflage")


def _shape(cases):
    return sorted((c.base_prompt_id, c.variant, c.prompt_text, c.is_harmful, c.category) for c in cases)


def test_expanded_pack_round_trips(tmp_path):
    out = tmp_path / "expanded.json"
    assert main(["expand", str(PACK), "--variants", ",".join(VARIANTS), "-o", str(out)]) == 0
    direct = expand(list(load_sources([PACK], MINORBENCH_HARMFUL_CATEGORIES).items), VARIANTS)
    reloaded = load_sources([out], MINORBENCH_HARMFUL_CATEGORIES)
    assert len(reloaded.items) == len(direct)
    again = expand(list(reloaded.items), VARIANTS)
    assert _shape(again) == _shape(direct)
    doc = json.loads(out.read_text())
    typo_item = next(i for i in doc["items"] if i["id"] == "danger-001--typo")
    assert (
        typo_item["metadata"]["variant_tags"] == ["variant:typo"]
        and typo_item["metadata"]["base_prompt_id"] == "danger-001"
    )


def test_console_script_errors_name_the_problem(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "pytest_guardbench.commands.main", "expand", str(PACK), "--variants", "nope"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 4
    assert "unknown variant 'nope'" in result.stderr
    listing = subprocess.run(
        [sys.executable, "-m", "pytest_guardbench.commands.main", "mutators"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "encoding:" in listing.stdout and "  base64: " in listing.stdout
