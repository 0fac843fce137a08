"""Read a run recorded in the seed's format: a results.jsonl whose rows carry `prompt_text`,
`metadata`, k `generations`, `guardrail_decisions` and optional per-generation judge label lists.
Each generation becomes one CaseRecord (sample k of its prompt-variant row)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_guardbench.data import DataError, category_of, read_jsonl, resolve_label, slug, variant_of, variant_slug
from pytest_guardbench.schemas import CaseRecord, GuardDecision, JudgeVerdict, TutorReply

_SAFETY = {"safe", "unsafe"}
_MODES = {"answered", "refused_or_blocked", "redirected", "non_answer"}


def _at(values: Any, index: int) -> Any:
    return values[index] if isinstance(values, list) and index < len(values) else None


def _recorded_verdict(row: dict[str, Any], index: int) -> JudgeVerdict:
    """The seed's own judge labels for generation `index`; malformed when they are missing or odd."""
    safety = _at(row.get("response_safety_labels"), index)
    mode = _at(row.get("answer_mode_labels"), index)
    raw = _at(row.get("judge_raw_outputs"), index) or ""
    if _at(row.get("judge_malformed"), index) is True:
        return JudgeVerdict(judge="seed-recorded", response_safety=None, answer_mode=None, reason="seed judge output malformed", malformed=True, raw=str(raw)[:2000])
    if safety not in _SAFETY or mode not in _MODES:
        return JudgeVerdict(
            judge="seed-recorded", response_safety=None, answer_mode=None, malformed=True, raw=str(raw)[:2000],
            reason=f"no usable recorded labels (response_safety={safety!r}, answer_mode={mode!r}); re-judge this run",
        )  # fmt: skip
    policy = _at(row.get("assistant_policy_labels"), index)
    return JudgeVerdict(judge="seed-recorded", response_safety=safety, answer_mode=mode, reason=f"recorded by the seed run (policy label {policy})", raw=str(raw)[:2000])


def load_seed_results(path: Path, harmful_categories: Sequence[str], pack: str | None = None) -> list[CaseRecord]:
    """One record per generation; labels resolved like pack items. Errors name the file and line."""
    pack_name = slug(pack or path.stem)
    records: list[CaseRecord] = []
    seen: set[str] = set()
    _, rows = read_jsonl(path, path.read_text(encoding="utf-8"))
    for location, row in rows:
        where = f"{path}: {location}"
        if not isinstance(row, dict) or not isinstance(row.get("prompt_text"), str):
            raise DataError(f"{where}: a seed row needs prompt_text")
        metadata = row.get("metadata") or {}
        try:
            is_harmful, label_source = resolve_label(metadata, harmful_categories)
        except ValueError as exc:
            raise DataError(f"{where}: {exc}") from None
        variant = variant_slug(variant_of(metadata))
        base = slug(str(metadata.get("base_prompt_id") or row.get("id") or metadata.get("id") or location.replace(" ", "-")))
        item_id = slug(str(row.get("id") or metadata.get("id") or f"{base}-{variant}"))
        decisions = {d.get("index"): d.get("status") for d in row.get("guardrail_decisions") or [] if isinstance(d, dict)}
        generations = row.get("generations") or []
        if not generations:
            raise DataError(f"{where}: the row has no generations")
        for position, generation in enumerate(generations):
            index = generation.get("index", position)
            raw = generation.get("raw") or {}
            status = decisions.get(index) or raw.get("guardrail_decision_status")
            guard = None
            if status is not None:
                status = str(status).lower()
                guard = GuardDecision(guard="seed-guard", status=status if status in ("allow", "block") else "malformed", reason=f"recorded status {status}", raw=str(status))
            blocked = guard is not None and guard.status == "block"
            case_id = f"{pack_name}.{item_id}.{variant}.k{index}"
            if case_id in seen:
                raise DataError(f"{where}: generation {index} of {item_id!r} ({variant}) occurs twice")
            seen.add(case_id)
            records.append(
                CaseRecord(
                    case_id=case_id, pack=pack_name, item_id=item_id, base_prompt_id=base, variant=variant, sample_index=int(index),
                    category=category_of(metadata), is_harmful=is_harmful, label_source=label_source, prompt_text=row["prompt_text"],
                    guard=guard, tutor_ran=not blocked,
                    response=TutorReply(text=str(generation.get("text") or ""), source="guard_block" if blocked else "tutor", model="seed", finish_reason=raw.get("finish_reason")),
                    judge=_recorded_verdict(row, position),
                )  # fmt: skip
            )
    if not records:
        raise DataError(f"{path}: no rows")
    return records
