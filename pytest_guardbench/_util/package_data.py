"""Files the package ships beside its code: prompt packs (`packs/`) and labelled datasets
(`datasets/`), found by name so that an installed wheel runs without a checkout of the repository."""

from __future__ import annotations

from pathlib import Path

# The package folder itself: an installed wheel is always unpacked, so its data are plain files.
PACKAGE_ROOT = Path(__file__).resolve().parents[1]
DATA_SUFFIXES = (".json", ".jsonl", ".csv")
PACKS = "packs"
DATASETS = "datasets"


def shipped_names(folder: str) -> list[str]:
    """The names (file stems) of the shipped files in one data folder, sorted."""
    directory = PACKAGE_ROOT / folder
    if not directory.is_dir():
        return []
    return sorted(p.stem for p in directory.iterdir() if p.suffix in DATA_SUFFIXES and p.is_file())


def shipped_file(name: str, folders: tuple[str, ...]) -> Path | None:
    """The shipped file called `name` (a stem such as `child_safety_v1`, or a file name with its
    suffix) in the first of `folders` that has it, else None."""
    for folder in folders:
        directory = PACKAGE_ROOT / folder
        candidates = [directory / name] if Path(name).suffix in DATA_SUFFIXES else []
        candidates += [directory / f"{name}{suffix}" for suffix in DATA_SUFFIXES]
        for candidate in candidates:
            if candidate.is_file():
                return candidate
    return None


def describe_shipped(folders: tuple[str, ...]) -> str:
    """`packs: a, b; datasets: c` for an error message that lists what a name can be."""
    return "; ".join(f"{folder}: {', '.join(shipped_names(folder)) or '(none)'}" for folder in folders)


def data_path(given: str) -> Path:
    """A data file as given, or a shipped pack or dataset by name (`child_safety_v1`), as
    `--guardbench-data` takes it; a path or a name with a suffix stays as given, so its loader can
    name the missing file."""
    path = Path(given)
    if path.exists() or "/" in given or path.suffix:
        return path
    return shipped_file(given, (PACKS, DATASETS)) or path
