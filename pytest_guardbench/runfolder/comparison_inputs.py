"""The files a run compares itself with (`--guardbench-baseline`, `--guardbench-scorecard-snapshot`),
read before any case runs: a corrupt one is a usage error naming the file and line at the start, not
a traceback after every call was paid for."""

from __future__ import annotations

from pytest_guardbench.errors import DataError
from pytest_guardbench.document.read import load_records

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from pytest_guardbench.settings.config import Settings
from pytest_guardbench.settings.options import ConfigError


class SnapshotRates(BaseModel):
    model_config = ConfigDict(extra="forbid")

    recall: float | None = None
    false_positive_rate: float | None = None
    balanced_error_rate: float | None = None


class ScorecardSnapshotFile(BaseModel):
    """The committed scorecard file as `baselines.scorecard_snapshot` writes it."""

    model_config = ConfigDict(extra="forbid")

    policy: str = "refusal"  # snapshots written before policies existed were refusal-scored
    system: SnapshotRates = SnapshotRates()
    per_variant: dict[str, SnapshotRates] = {}


def check_comparison_inputs(settings: Settings, update_snapshots: bool) -> None:
    if settings.baseline is not None:
        check_baseline(settings.baseline)
    path = settings.scorecard_snapshot
    if path is not None and path.is_file() and not update_snapshots:
        check_snapshot(path)


def check_baseline(run_dir: Path) -> None:
    results = run_dir / "results.jsonl"
    if not results.is_file():
        raise ConfigError(f"--guardbench-baseline: {run_dir} has no results.jsonl (expected a reports/<run-id> folder)")
    try:
        load_records(run_dir)
    except DataError as exc:
        raise ConfigError(f"--guardbench-baseline {exc}") from None
    except OSError as exc:
        raise ConfigError(
            f"--guardbench-baseline {results}: cannot be read ({exc.strerror or type(exc).__name__})"
        ) from None


def check_snapshot(path: Path) -> None:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--guardbench-scorecard-snapshot {path}: cannot be read ({type(exc).__name__})") from None
    try:
        ScorecardSnapshotFile.model_validate(json.loads(text))
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"--guardbench-scorecard-snapshot {path}: line {exc.lineno}: not valid JSON ({exc.msg}); "
            "fix it, or write it anew with --snapshot-update"
        ) from None
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(map(str, error["loc"])) or "(top level)"
        raise ConfigError(
            f"--guardbench-scorecard-snapshot {path}: {where}: {error['msg']}; "
            "fix it, or write it anew with --snapshot-update"
        ) from None
