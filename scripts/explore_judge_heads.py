"""Grouped 5-fold cross-validation of other offline-judge heads and representations, over the real
SmolLM2 replies the shipped judge is trained on (development data; the held-out v5 audit is never
read here). Each fold trains on the written train rows plus the other folds' real replies and is
scored on its own real replies: answer-mode and policy-label agreement, unsafe missed, over-blocked.

    .venv/bin/python scripts/explore_judge_heads.py   # logistic variants, SVM, MLP, boosting (scikit-learn: dev extra)

This is how the README's "what else was tried" numbers were measured; nothing here is shipped.
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from pytest_guardbench.cases.sources import load_judge_labels
from pytest_guardbench.judges.base import JudgeInput
from pytest_guardbench.judges.offline import feature_rows
from pytest_guardbench.scoring.policies import assistant_policy_v2_label
from pytest_guardbench.providers import ProviderOptions, minilm_embedder
from pytest_guardbench.records import ANSWER_MODES

sys.path.insert(0, str(Path(__file__).resolve().parent))
from logistic_fit import fit  # noqa: E402 - a sibling script module
from train_offline_judge import DATASET, REAL_RESPONSES, prompt_group  # noqa: E402

Predict = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")


def logistic(n_classes: int, l2: float, balanced: bool = False) -> Predict:
    def predict(x_train: np.ndarray, y: np.ndarray, x_test: np.ndarray) -> np.ndarray:
        mean, scale = x_train.mean(0), x_train.std(0) + 1e-6
        w, b = fit((x_train - mean) / scale, y, n_classes, l2, balanced=balanced)
        logits = ((x_test - mean) / scale) @ w.T + b
        return (logits[:, 0] > 0).astype(int) if n_classes == 2 else logits.argmax(1)

    return predict


def sklearn_heads() -> dict[str, Predict]:
    try:
        from sklearn.ensemble import HistGradientBoostingClassifier
        from sklearn.neural_network import MLPClassifier
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
        from sklearn.svm import SVC
    except ImportError:
        print("(scikit-learn not installed: SVM, MLP and boosting heads skipped)")
        return {}
    makers = {
        "SVM (RBF, C=3)": lambda: make_pipeline(StandardScaler(), SVC(C=3.0)),
        "MLP (64 hidden)": lambda: make_pipeline(
            StandardScaler(), MLPClassifier((64,), alpha=1.0, max_iter=500, random_state=0)
        ),
        "gradient boosting": lambda: HistGradientBoostingClassifier(max_iter=200, learning_rate=0.05, random_state=0),
    }
    return {name: (lambda make: lambda xt, y, xs: make().fit(xt, y).predict(xs))(make) for name, make in makers.items()}


def main() -> int:
    written = [label for label in load_judge_labels(DATASET) if label.split == "train"]
    real = [label for path in REAL_RESPONSES for label in load_judge_labels(path)]
    rows = written + real
    embedder = minilm_embedder(ProviderOptions(model_cache=Path(".")))
    inputs = [JudgeInput(lb.prompt, lb.response, lb.source, lb.is_harmful) for lb in rows]
    base = np.array(feature_rows(inputs, embedder))
    response_vectors = base[:, :384]
    prompts = np.array(embedder.embed([lb.prompt for lb in rows]))
    unit = lambda a: a / (np.linalg.norm(a, axis=1, keepdims=True) + 1e-9)  # noqa: E731
    cosine = (unit(response_vectors) * unit(prompts)).sum(1, keepdims=True)
    sentences, owner = [], []
    for i, lb in enumerate(rows):
        found = [s.strip() for s in SENTENCE.findall(lb.response) if len(s.strip()) > 2][:8]
        sentences += found or [lb.response.strip() or "(empty)"]
        owner += [i] * max(1, len(found))
    sentence_vectors, owner_of = np.array(embedder.embed(sentences)), np.array(owner)
    first = np.array([sentence_vectors[owner_of == i][0] for i in range(len(rows))])
    largest = np.array([sentence_vectors[owner_of == i].max(0) for i in range(len(rows))])
    pair = np.array(embedder.embed([f"{lb.prompt} \n {lb.response}" for lb in rows]))
    handmade = base[:, 384:]

    is_real = np.array([False] * len(written) + [True] * len(real))
    guard_block = np.array([lb.source == "guard_block" for lb in rows])
    mode_y = np.array([ANSWER_MODES.index(lb.answer_mode) if lb.answer_mode else -1 for lb in rows])
    unsafe_y = np.array([lb.human_label == "unsafe" for lb in rows], dtype=int)
    groups = [prompt_group(lb.id) for lb in rows]
    ordered = sorted(set(groups), key=lambda g: hashlib.sha256(g.encode()).hexdigest())
    fold = np.array([{g: i % 5 for i, g in enumerate(ordered)}[g] for g in groups])

    def measure(name: str, x: np.ndarray, mode_head: Predict, safety_head: Predict) -> None:
        mode, unsafe = np.zeros(len(rows), int), np.zeros(len(rows), int)
        for k in range(5):
            train, test = (fold != k) & ~guard_block, fold == k
            labelled = train & (mode_y >= 0)
            mode[test] = mode_head(x[labelled], mode_y[labelled], x[test])
            unsafe[test] = safety_head(x[train], unsafe_y[train], x[test])
        mode[guard_block], unsafe[guard_block] = ANSWER_MODES.index("refused_or_blocked"), 0
        scored = [i for i in range(len(rows)) if is_real[i] and mode_y[i] >= 0]
        policy = [
            assistant_policy_v2_label(rows[i].is_harmful, "unsafe" if unsafe[i] else "safe", ANSWER_MODES[mode[i]])
            == assistant_policy_v2_label(rows[i].is_harmful, rows[i].human_label, rows[i].answer_mode)
            for i in scored
        ]
        on_harmful = [ok for i, ok in zip(scored, policy, strict=True) if rows[i].is_harmful]
        missed = [not unsafe[i] for i in scored if unsafe_y[i]]
        blocked = [bool(unsafe[i]) for i in scored if not unsafe_y[i]]
        print(
            f"{name:48s} answer mode {np.mean([mode[i] == mode_y[i] for i in scored]):.3f}  policy {np.mean(policy):.3f} "
            f"(harmful prompts {np.mean(on_harmful):.3f})  "
            f"unsafe missed {sum(missed)}/{len(missed)}  over-blocked {sum(blocked)}/{len(blocked)}"
        )

    shipped_safety = logistic(2, 0.3, balanced=True)
    print(f"{len(real)} real replies scored, grouped 5-fold ({len(set(groups))} prompt groups)")
    measure("shipped recipe (logistic, both heads)", base, logistic(4, 0.1), shipped_safety)
    measure("+ prompt-reply cosine", np.hstack([base, cosine]), logistic(4, 0.1), shipped_safety)
    measure(
        "first + largest sentence vectors for the reply's",
        np.hstack([first, largest, handmade]),
        logistic(4, 0.1),
        shipped_safety,
    )
    measure(
        "prompt+reply embedded together for the reply's", np.hstack([pair, handmade]), logistic(4, 0.1), shipped_safety
    )
    for l2 in (0.1, 1.0, 3.0):
        measure(f"safety head L2 {l2} (shipped 0.3)", base, logistic(4, 0.1), logistic(2, l2, balanced=True))
    for name, head in sklearn_heads().items():
        measure(f"{name}, answer mode only", base, head, shipped_safety)
        measure(f"{name}, safety only", base, logistic(4, 0.1), head)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
