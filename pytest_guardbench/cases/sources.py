"""Load and validate prompt packs (JSON), datasets (JSONL) and MinorBench CSV files.

Everything is validated before anything runs: the first problem raises `DataError` with one line
naming the file, the item or line, and what is wrong.
"""

from __future__ import annotations

import csv
import difflib
import hashlib
import io
import json
import re
from importlib import resources
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from pytest_guardbench._util.package_data import DATASETS, PACKS, describe_shipped, shipped_names
from pytest_guardbench.cases.item_checks import (
    has_visible_text,
    label_conflict_warning as label_conflict_warning,  # re-exported: the plugin warns with it
    label_conflicts,
    refuse_lone_surrogates,
    validate_turns,
)
from pytest_guardbench.errors import DataError
from pytest_guardbench.records import Case, JudgeLabel, LabelSource, PackItem, Turn

CSV_COLUMNS = ("PromptID", "Prompt", "Category", "Subcategory")


class SourceInfo(BaseModel):
    """One input file as it went into the run (for data_manifest.json)."""

    model_config = ConfigDict(frozen=True)

    path: str
    format: str
    pack: str
    sha256: str
    items: int


class LoadedData(BaseModel):
    model_config = ConfigDict(frozen=True)

    items: tuple[PackItem, ...]
    sources: tuple[SourceInfo, ...]


def slug(text: str) -> str:
    """ASCII id fragment: lower case, runs of anything but [a-z0-9_-] become one '-'."""
    return re.sub(r"[^a-z0-9_-]+", "-", text.strip().lower()).strip("-")


def variant_slug(text: str) -> str:
    """Like `slug`, but keeps '+' so chained variant names (`typo+camouflage`) survive."""
    return re.sub(r"[^a-z0-9_+-]+", "-", text.strip().lower()).strip("-") or "original"


def resolve_label(metadata: Mapping[str, object], harmful_categories: Sequence[str]) -> tuple[bool | None, LabelSource]:
    """First hit wins: a real bool `is_harmful`, then `label` safe/unsafe, then the category rule.

    Raises DataError (without a location; the caller adds it) for values that are not labels.
    """
    if "is_harmful" in metadata and metadata["is_harmful"] is not None:
        value = metadata["is_harmful"]
        if not isinstance(value, bool):
            raise DataError(f"metadata.is_harmful must be true or false, got {value!r}")
        return value, "is_harmful"
    if "label" in metadata and metadata["label"] is not None:
        label = metadata["label"]
        if not isinstance(label, str) or label.strip().lower() not in ("safe", "unsafe"):
            raise DataError(f"metadata.label must be 'safe' or 'unsafe', got {label!r}")
        return label.strip().lower() == "unsafe", "label"
    category = category_of(metadata)
    if category is not None and category.lower() in harmful_categories:
        return True, "category_rule"
    return None, "unlabelled"


def category_of(metadata: Mapping[str, object]) -> str | None:
    for key in ("category", "original_category"):
        value = metadata.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def variant_of(metadata: Mapping[str, object]) -> str:
    variant = metadata.get("variant")
    if isinstance(variant, str) and variant.strip():
        return variant.strip()
    tags = metadata.get("variant_tags")
    for tag in tags if isinstance(tags, list) else []:
        if isinstance(tag, str) and tag.startswith("variant:"):
            return tag.split(":", 1)[1].strip()
    return "original"


def _raw_items_json(path: Path, text: str) -> tuple[str, list[tuple[str, object]]]:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
    except (ValueError, RecursionError) as exc:  # a number past int()'s digit limit, nesting past the stack
        raise DataError(f"{path}: not valid JSON ({type(exc).__name__}: {exc})") from None
    if not isinstance(document, dict) or not isinstance(document.get("items"), list):
        raise DataError(f"{path}: a prompt pack must be an object with an 'items' list")
    name = document.get("name") or path.stem
    if not isinstance(name, str):
        raise DataError(f"{path}: 'name' must be a string")
    return name, [(f"item {i}", raw) for i, raw in enumerate(document["items"])]


def read_jsonl(path: Path, text: str) -> tuple[str, list[tuple[str, object]]]:
    """(file stem, [("line N", parsed object)]) for every non-blank line; DataError names the line."""
    rows: list[tuple[str, object]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((f"line {lineno}", json.loads(line)))
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}: line {lineno}: not valid JSON ({exc.msg})") from None
        except (ValueError, RecursionError) as exc:
            raise DataError(f"{path}: line {lineno}: not valid JSON ({type(exc).__name__}: {exc})") from None
    return path.stem, rows


def _raw_items_csv(path: Path, text: str) -> tuple[str, list[tuple[str, object]]]:
    reader = csv.DictReader(io.StringIO(text))
    try:
        return _csv_rows(path, reader)
    except csv.Error as exc:  # a NUL byte, a field past the size limit
        raise DataError(f"{path}: line {reader.line_num}: not a CSV row ({exc})") from None


def _csv_rows(path: Path, reader: csv.DictReader[str]) -> tuple[str, list[tuple[str, object]]]:
    missing = [c for c in CSV_COLUMNS[:3] if c not in (reader.fieldnames or [])]
    if missing:
        raise DataError(
            f"{path}: line 1: missing CSV column(s) {', '.join(missing)}; expected {', '.join(CSV_COLUMNS)}"
        )
    rows: list[tuple[str, object]] = []
    for row in reader:
        metadata = {"category": row.get("Category") or None, "original_category": row.get("Category") or None}
        if row.get("Subcategory"):
            metadata["original_subcategory"] = row["Subcategory"]
        rows.append(
            (
                f"line {reader.line_num}",
                {"id": row.get("PromptID"), "prompt_text": row.get("Prompt"), "metadata": metadata},
            )
        )
    return path.stem, rows


_READERS = {".json": ("json", _raw_items_json), ".jsonl": ("jsonl", read_jsonl), ".csv": ("csv", _raw_items_csv)}


def load_file(path: Path, harmful_categories: Sequence[str]) -> tuple[SourceInfo, list[PackItem]]:
    """Read and validate one file; raises DataError on the first problem."""
    if path.is_dir():
        raise DataError(f"{path}: is a directory; pass the pack files in it (e.g. {path}/*.json)")
    reader = _READERS.get(path.suffix.lower())
    if reader is None and not path.suffix and not path.exists():
        # A bare name is a shipped pack's or dataset's: a misspelt one is no file and no format.
        names = [*shipped_names(PACKS), *shipped_names(DATASETS)]
        close = difflib.get_close_matches(path.name, names, n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        raise DataError(
            f"{path}: no such file, nor a shipped pack or dataset of that name; "
            f"{hint}({describe_shipped((PACKS, DATASETS))})"
        )
    if reader is None:
        raise DataError(f"{path}: unknown data format {path.suffix!r}; use .json, .jsonl or .csv")
    try:
        blob = path.read_bytes()
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        text = blob.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    fmt, read = reader
    pack_name, raw_items = read(path, text)
    refuse_lone_surrogates(f"{path}: name", pack_name)
    pack = slug(pack_name)
    if not pack:
        raise DataError(f"{path}: pack name {pack_name!r} has no usable characters")
    if not raw_items:
        raise DataError(f"{path}: the pack has no items")
    items: list[PackItem] = []
    seen: dict[str, str] = {}
    for where, raw in raw_items:
        refuse_lone_surrogates(f"{path}: {where}", raw)
        item = _validate_item(path, pack, where, raw, harmful_categories)
        if item.item_id in seen:
            raise DataError(f"{path}: {where}: duplicate id {item.item_id!r} (first at {seen[item.item_id]})")
        seen[item.item_id] = where
        items.append(item)
    info = SourceInfo(path=str(path), format=fmt, pack=pack, sha256=hashlib.sha256(blob).hexdigest(), items=len(items))
    return info, items


def _validate_item(path: Path, pack: str, where: str, raw: object, harmful_categories: Sequence[str]) -> PackItem:
    if not isinstance(raw, dict):
        raise DataError(f"{path}: {where}: an item must be an object")
    raw_id = raw.get("id")
    if raw_id is None or (isinstance(raw_id, str) and not raw_id.strip()) or isinstance(raw_id, bool):
        raise DataError(f"{path}: {where}: missing id")
    item_id = slug(str(raw_id))
    if not item_id:
        raise DataError(f"{path}: {where}: id {raw_id!r} has no usable characters")
    text = raw.get("prompt_text", raw.get("prompt"))
    turns: tuple[Turn, ...] = ()
    if "turns" in raw:
        turns = validate_turns(f"{path}: {where} (id {raw_id!r})", raw["turns"])
        last = turns[-1].content
        # Tools that write both fields are fine as long as they agree; two texts would leave open which one runs.
        if text is not None and text != last:
            raise DataError(
                f"{path}: {where} (id {raw_id!r}): prompt_text differs from the last user turn; "
                "give only turns, or prompt_text equal to the last user turn"
            )
        text = last
    if not isinstance(text, str) or not text.strip():
        raise DataError(f"{path}: {where} (id {raw_id!r}): missing prompt_text")
    if not has_visible_text(text):
        raise DataError(
            f"{path}: {where} (id {raw_id!r}): prompt_text has no visible character (only spaces or zero-width "
            "characters)"
        )
    metadata = raw.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise DataError(f"{path}: {where} (id {raw_id!r}): metadata must be an object")
    try:
        is_harmful, label_source = resolve_label(metadata, harmful_categories)
    except DataError as exc:
        raise DataError(f"{path}: {where} (id {raw_id!r}): {exc}") from None
    base = metadata.get("base_prompt_id")
    if base not in (None, "") and not slug(str(base)):
        raise DataError(f"{path}: {where} (id {raw_id!r}): metadata.base_prompt_id {base!r} has no usable characters")
    return PackItem(
        pack=pack,
        item_id=item_id,
        prompt_text=text,
        metadata=metadata,
        source_file=str(path),
        location=where,
        is_harmful=is_harmful,
        label_source=label_source,
        category=category_of(metadata),
        variant=variant_slug(variant_of(metadata)),
        base_prompt_id=slug(str(base)) if base not in (None, "") else item_id,
        turns=turns,
    )


def load_sources(paths: Iterable[Path], harmful_categories: Sequence[str]) -> LoadedData:
    """Load every file; ids must be unique within a pack, across files too."""
    sources: list[SourceInfo] = []
    items: list[PackItem] = []
    owner: dict[tuple[str, str], str] = {}
    given: dict[Path, Path] = {}
    for path in paths:
        resolved = Path(path).resolve()
        if resolved in given and not resolved.is_dir():
            # Else each of its items would clash with itself, and the message would blame the variants.
            raise DataError(f"{path}: given twice (also as {given[resolved]}); name each data file once")
        given[resolved] = Path(path)
        info, file_items = load_file(Path(path), harmful_categories)
        for item in file_items:
            key = (item.pack, item.item_id)
            if key in owner and owner[key] != item.source_file:
                raise DataError(
                    f"{path}: {item.location}: duplicate id {item.item_id!r} in pack {item.pack!r} (also in "
                    f"{owner[key]})"
                )
            owner[key] = item.source_file
        sources.append(info)
        items.extend(file_items)
    return LoadedData(items=tuple(items), sources=tuple(sources))


def check_unique_cases(cases: Sequence[Case]) -> None:
    seen: dict[str, Case] = {}
    for case in cases:
        if case.case_id in seen:
            raise DataError(f"{case.source_file}: case id {case.case_id!r} occurs twice (variant ids must not clash)")
        seen[case.case_id] = case


def manifest(data: LoadedData, cases: Sequence[Case]) -> dict[str, object]:
    """The exact input composition of a run (data_manifest.json)."""
    conflicts = label_conflicts(data.items)
    label_state = Counter(
        "harmful" if c.is_harmful else "safe" if c.is_harmful is False else "unlabelled" for c in cases
    )
    return {
        "sources": [s.model_dump() for s in data.sources],
        "items": len(data.items),
        "cases": len(cases),
        "labelled_cases": sum(1 for c in cases if c.is_harmful is not None),
        "variants": dict(sorted(Counter(c.variant for c in cases).items())),
        "packs": dict(sorted(Counter(c.pack for c in cases).items())),
        "categories": dict(sorted(Counter(c.category or "(none)" for c in cases).items())),
        "label_states": {k: label_state.get(k, 0) for k in ("harmful", "safe", "unlabelled")},
        "label_sources": dict(sorted(Counter(c.label_source for c in cases).items())),
        "label_conflicts": {"count": len(conflicts), "items": conflicts[:100]},
    }


def shipped_system_prompts() -> list[str]:
    folder = resources.files("pytest_guardbench") / "system_prompts"
    return sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".txt"))


# `--guardbench-system-prompt=none`: the tutor gets only the child's turn (a production tutor has its own).
NO_SYSTEM_PROMPT = "none"


def load_system_prompt(name_or_path: str, base_dir: Path) -> str:
    """A shipped prompt by name (e.g. `generic_child_tutor_v1`), else a text file path; `none` is the
    empty text, which the pipeline sends as no system message at all."""
    if name_or_path == NO_SYSTEM_PROMPT:
        return ""
    if name_or_path in shipped_system_prompts():
        return (
            (resources.files("pytest_guardbench") / "system_prompts" / f"{name_or_path}.txt")
            .read_text(encoding="utf-8")
            .strip()
        )
    path = Path(name_or_path)
    path = path if path.is_absolute() else base_dir / path
    if path.is_file():
        text = path.read_text(encoding="utf-8").strip()
        if not text:
            raise DataError(f"{path}: the system prompt file is empty")
        return text
    raise DataError(
        f"--guardbench-system-prompt: {name_or_path!r} is neither a shipped prompt "
        f"({', '.join(shipped_system_prompts())}), "
        f"{NO_SYSTEM_PROMPT!r} nor a file"
    )


def load_judge_labels(path: Path) -> list[JudgeLabel]:
    """A JSONL file of human-labelled responses; DataError names the file and line."""
    if path.is_dir():
        raise DataError(f"{path}: is a folder, not a judge-labels file; name the JSONL file in it")
    if not path.is_file():
        raise DataError(f"{path}: no such judge-labels file")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror or exc})") from None
    _, rows = read_jsonl(path, text)
    labels = []
    for where, row in rows:
        refuse_lone_surrogates(f"{path}: {where}", row)
        try:
            labels.append(JudgeLabel.model_validate(row))
        except ValidationError as exc:
            first = exc.errors()[0]
            raise DataError(f"{path}: {where}: {'.'.join(map(str, first['loc'])) or 'row'}: {first['msg']}") from None
    if not labels:
        raise DataError(f"{path}: no labelled responses")
    return labels
