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


def build_successor_model(
    folder: Path, text: str | list[str], chat_template: str, eos_token: str = "<|eos|>", also: str = ""
) -> Path:
    """A tiny LM whose greedy continuation of each word of `text` is the word after it, whatever
    came before: every layer's output projection is zeroed, so the last token's embedding alone
    picks the next token. A template whose generation prompt ends in the first word makes the model
    answer the rest word for word (`text` should end in `eos_token`), e.g. Granite Guardian 3.3's
    `<score> yes </score>`; a list gives the tokens one by one (tokens with spaces or newlines,
    which the model can say but a prompt cannot contain). `also` adds another chain. At each step the next
    word's logit is 10 and every other 0."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    chains = [text.split() if isinstance(text, str) else text, also.split()]
    words = list(dict.fromkeys([*chains[0], *chains[1], eos_token]))
    vocab = {tok: i for i, tok in enumerate([*words, "<unk>"])}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="<unk>", eos_token=eos_token, additional_special_tokens=[eos_token]
    )
    tokenizer.chat_template = chat_template
    size = len(vocab) + 2 + len(vocab) % 2  # an even head size for RoPE
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=size,
        intermediate_size=size,
        num_hidden_layers=1,
        num_attention_heads=1,
        num_key_value_heads=1,
        max_position_embeddings=512,
        eos_token_id=vocab[eos_token],
        bos_token_id=None,
        pad_token_id=None,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        model.model.norm.weight.fill_(1.0)
        model.model.embed_tokens.weight.copy_(torch.eye(len(vocab), size))
        head = torch.zeros(len(vocab), size)
        for chain in chains:
            for current, following in zip(chain, chain[1:], strict=False):
                head[vocab[following], vocab[current]] = 10.0
        model.lm_head.weight.copy_(head)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


# Test templates in each Granite Guardian version's documented *shape* (not IBM's template text):
# 3.0-3.2 take guardian_config.risk_name (+ risk_definition) and raise otherwise; 3.3 takes
# guardian_config.criteria_id or custom_criteria plus a `think` switch, and raises on risk_name.
GRANITE_32_TEMPLATE = (
    "{%- if guardian_config is not defined or 'risk_name' not in guardian_config -%}"
    "{{ raise_exception('guardian_config must name a risk') }}{%- endif -%}"
    "<|start_of_role|>user<|end_of_role|> risk {{ guardian_config['risk_name'] }}"
    "{% if 'risk_definition' in guardian_config %} definition {{ guardian_config['risk_definition'] }}{% endif %}"
    " User Message: {{ messages[-1]['content'] }} <|end_of_text|> <|start_of_role|>assistant<|end_of_role|>"
)
GRANITE_33_TEMPLATE = (
    "{%- if guardian_config is not defined -%}{{ raise_exception('guardian_config is required') }}{%- endif -%}"
    "{%- if 'risk_name' in guardian_config -%}{{ raise_exception('use criteria_id; risk_name is 3.2') }}{%- endif -%}"
    "{%- if 'criteria_id' not in guardian_config and 'custom_criteria' not in guardian_config -%}"
    "{{ raise_exception('guardian_config needs criteria_id or custom_criteria') }}{%- endif -%}"
    "<|start_of_role|>system<|end_of_role|> judge agent <|end_of_text|> <|start_of_role|>user<|end_of_role|>"
    " criteria {{ guardian_config.get('criteria_id', guardian_config.get('custom_criteria')) }}"
    " User Message: {{ messages[-1]['content'] }} <|end_of_text|>"
    " {% if think %}<|think_on|>{% else %}<|think_off|>{% endif %} "  # the space lets `<score>` be appended as a word
)
