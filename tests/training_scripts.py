"""Running a head's training script in `--check` mode, as a reviewer would, for the tests that
guard the committed heads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def check_committed_head(script: str, *options: str) -> subprocess.CompletedProcess[str]:
    """`scripts/<script> --check [options]`: refits on the train rows and compares with the committed file."""
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / script), "--check", *options],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
