"""A fitted logistic head read from JSON: standardise the features, then a sigmoid (one weight row)
or a softmax (several). Pure Python; the heads are fitted by the scripts in scripts/ with scikit-learn."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# How far, in probability, a refit of a committed head (scripts/train_offline_*.py --check) may be
# from it on any train row, on any machine. Derived on 2026-11-25 by refitting every head (the L2
# search, the guard's threshold search and the final fit) on a 2-core Xeon with its inputs disturbed
# and comparing with the undisturbed fit on the train, test and v5 rows (largest |dp| seen):
#   MiniLM embeddings computed with other CPUs' kernels (ATEN_CPU_CAPABILITY=default with MKL SSE4_2
#     and oneDNN SSE41; or AVX2 for all three): 86-95% of the features change, by 3e-8 typically and
#     4.4e-7 at most                                                              -> 6.9e-7
#   features times (1 + e * N(0, 1)), e = 1e-9 / 1e-6 / 1e-5                     -> 5.1e-9 / 1.1e-6 / 1.1e-5
#   training rows reversed or shuffled                                            -> 1.7e-9
#   one vs two BLAS/OpenMP threads (threadpoolctl), one vs two torch threads      -> 1.4e-9 / 0
# and lbfgs at its tolerance is within 1.4e-6 of the exact optimum (Newton's method run to 1e-10).
# None of these changed a chosen L2, the guard's threshold or any decision: the smallest margin of a
# cross-validated prediction was 4.6e-5 and of an out-of-fold probability to a candidate threshold
# 5.8e-5. 1e-4 is 145 times the largest difference other CPUs' kernels made, and 9 times the one
# from features disturbed about 20 times more than those kernels disturb them; the Adam fit this
# replaced moved by 0.11 between two machines. A decision may differ only on a row whose committed
# probability is within the tolerance of the boundary (for several classes: whose top two
# probabilities are within twice the tolerance).
REFIT_TOLERANCE = 1e-4


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
