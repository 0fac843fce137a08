"""A fitted logistic head read from JSON: standardise the features, then a sigmoid (one weight row)
or a softmax (several). Pure Python; the heads are fitted by the scripts in scripts/ with numpy."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LogisticHead:
    """Standardise, then softmax (several classes) or sigmoid (one weight row)."""

    classes: tuple[str, ...]
    weights: tuple[tuple[float, ...], ...]
    bias: tuple[float, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]

    def probabilities(self, row: Sequence[float]) -> dict[str, float]:
        x = [(v - m) / s for v, m, s in zip(row, self.mean, self.scale, strict=True)]
        logits = [
            sum(w * v for w, v in zip(weights, x, strict=True)) + b
            for weights, b in zip(self.weights, self.bias, strict=True)
        ]
        if len(self.classes) == 2 and len(logits) == 1:
            p = 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, logits[0]))))
            return {self.classes[0]: 1.0 - p, self.classes[1]: p}
        top = max(logits)
        exps = [math.exp(v - top) for v in logits]
        total = sum(exps)
        return {c: e / total for c, e in zip(self.classes, exps, strict=True)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LogisticHead:
        return cls(
            classes=tuple(data["classes"]),
            weights=tuple(tuple(w) for w in data["weights"]),
            bias=tuple(data["bias"]),
            mean=tuple(data["mean"]),
            scale=tuple(data["scale"]),
        )
