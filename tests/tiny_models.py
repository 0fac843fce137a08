"""Tiny causal LMs with word-level tokenizers, built and saved on the spot (no hub), for the real
transformers loading and generate paths."""

from __future__ import annotations

from pathlib import Path


def build_tiny_chat_model(
    folder: Path,
    words: list[str],
    chat_template: str,
    arch: str = "llama",
    constant_output: bool = False,
    eos_token: str = "<|eos|>",
    extra_specials: tuple[str, ...] = (),
    hidden_size: int = 32,
    layers: int = 2,
) -> Path:
    """Save a 2-layer model and tokenizer. With `constant_output`, the final norm is zeroed so every
    logit is 0 and greedy decoding always picks token id 0 (the first word), giving a known output."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (
        GraniteMoeConfig,
        GraniteMoeForCausalLM,
        LlamaConfig,
        LlamaForCausalLM,
        PreTrainedTokenizerFast,
    )

    specials = [*extra_specials, eos_token]
    ordered = [w for w in dict.fromkeys(words)]
    vocab = {tok: i for i, tok in enumerate([*ordered, "<unk>", *specials])}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="<unk>", eos_token=eos_token, additional_special_tokens=specials
    )
    tokenizer.chat_template = chat_template
    torch.manual_seed(0)
    common = dict(
        vocab_size=len(vocab),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=256,
        eos_token_id=vocab[eos_token],
        bos_token_id=None,
        pad_token_id=None,
    )
    if arch == "granitemoe":
        model = GraniteMoeForCausalLM(GraniteMoeConfig(num_local_experts=2, num_experts_per_tok=1, **common))
    else:
        model = LlamaForCausalLM(LlamaConfig(**common))
    if constant_output:
        with torch.no_grad():
            model.model.norm.weight.zero_()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
