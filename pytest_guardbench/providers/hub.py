"""Where a local (transformers) model comes from, the way transformers users expect: a folder, the
Hugging Face cache, or the hub on first use; only the cache when offline is asked for
(`--guardbench-offline`, or `HF_HUB_OFFLINE=1` as huggingface_hub reads it). And the one-line
reason when it cannot come from anywhere, checked before any case runs.

huggingface_hub and transformers are imported only inside the functions that need them.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

_TRUE = {"1", "ON", "YES", "TRUE"}


def offline_requested(flag: bool) -> bool:
    """The option, or huggingface_hub's own switches (read now, not at its import)."""
    return flag or any(
        (os.environ.get(name) or "").upper() in _TRUE for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def local_files_only(model: str, offline: bool) -> bool:
    """A folder never needs the hub; a hub id does unless offline."""
    return offline or Path(model).is_dir()


def _hub_page(model: str) -> str:
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    return f"{endpoint}/{model}"


def _cache_dir() -> str:
    from huggingface_hub import constants

    return os.environ.get("HF_HUB_CACHE") or constants.HF_HUB_CACHE


@contextlib.contextmanager
def _quiet_retries() -> Iterator[None]:
    """huggingface_hub logs a warning per retried request; the preflight's one line says it all."""
    hub_logger = logging.getLogger("huggingface_hub")
    level = hub_logger.level
    hub_logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        hub_logger.setLevel(level)


def where_problem(model: str, offline: bool) -> str | None:
    """None when the model's config can be had (from its folder, the cache, or the hub), else what
    to do. Downloads only `config.json` (a few kB), so the check is cheap even for an 8B model."""
    folder = Path(model)
    if folder.is_dir():
        return None if (folder / "config.json").is_file() else f"{folder} is a folder without config.json"
    if model.startswith((".", "/", "~")) or model.count("/") != 1:
        return f"{model!r} is neither a model folder nor a Hugging Face model id (owner/name)"
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    token_set = bool(os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN"))
    try:
        with _quiet_retries():
            hf_hub_download(model, "config.json", local_files_only=offline)
    except GatedRepoError:
        if token_set:
            return (
                f"{model} is a gated repository and the token in HF_TOKEN has no access to it yet; "
                f"accept its licence at {_hub_page(model)} with that account"
            )
        return (
            f"{model} is a gated repository: accept its licence at {_hub_page(model)}, then set HF_TOKEN "
            "to a token of that account (or run `hf auth login`)"
        )
    except RepositoryNotFoundError:
        return (
            f"{model} is not a model on the hub ({_hub_page(model)}); check the id, "
            "or set HF_TOKEN if it is a private repository"
        )
    except RevisionNotFoundError as exc:
        return f"{model}: {exc}"
    except LocalEntryNotFoundError:
        if offline:
            return (
                f"{model} is not in the local Hugging Face cache ({_cache_dir()}) and offline mode is on; "
                f"download it once with `hf download {model}`, or run without --guardbench-offline / HF_HUB_OFFLINE"
            )
        return (
            f"{model} is not in the local Hugging Face cache ({_cache_dir()}) and the hub "
            f"({os.environ.get('HF_ENDPOINT', 'https://huggingface.co')}) cannot be reached; check the network "
            f"or download it once with `hf download {model}`"
        )
    except HfHubHTTPError as exc:
        return f"{model}: the hub answered {exc.response.status_code if exc.response is not None else 'an error'}"
    return None


def load_tokenizer(model: str, offline: bool, trust_remote_code: bool = False) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(
        model, local_files_only=local_files_only(model, offline), trust_remote_code=trust_remote_code
    )


def template_problem(tokenizer: Any, renders: Sequence[Mapping[str, object]]) -> str | None:
    """The tokenizer must have a chat template that accepts each of the guard's template kwargs."""
    if not getattr(tokenizer, "chat_template", None):
        return "its tokenizer has no chat template"
    for kwargs in renders:
        try:
            tokenizer.apply_chat_template(
                [{"role": "user", "content": "guardbench preflight"}],
                tokenize=False,
                add_generation_prompt=True,
                **kwargs,
            )
        except Exception as exc:  # noqa: BLE001 - a template raising on its input is the finding
            shown = ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) or "no arguments"
            return f"its chat template rejected {shown}: {exc}"
    return None
