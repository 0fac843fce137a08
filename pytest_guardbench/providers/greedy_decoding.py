"""Greedy decoding of many prompts at once for `HFChatProvider`, picking what `generate` picks on
left-padded batches with two savings: the token prefix all prompts share (the system prompt) runs
once per call instead of once per prompt, and a row leaves its batch as soon as it ends, so a batch
shrinks instead of carrying its finished rows to the end of its longest reply."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any


def greedy_replies(
    model: Any, rows: list[list[int]], pad_id: int, eos_ids: set[int], batch_size: int, max_new_tokens: int
) -> list[tuple[list[int], str]]:
    """Each prompt's reply tokens (without the end token) and finish reason, in the order of `rows`
    (the prompts' token ids)."""
    import torch

    if not rows:
        return []
    shared = _shared_prefix_length(rows)
    names = _forward_names(model)
    prefix_cache = _new_cache(model)
    if shared:
        with torch.inference_mode():
            model(
                input_ids=torch.tensor([rows[0][:shared]], device=model.device),
                use_cache=True,
                **{names.cache: prefix_cache},
                **names.last_logit_only,
            )
    results: list[tuple[list[int], str] | None] = [None] * len(rows)
    # Similar lengths share a batch, so little compute goes to left padding.
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        suffixes = [rows[i][shared:] for i in chunk]
        replies = _greedy_batch(model, suffixes, shared, prefix_cache, pad_id, eos_ids, max_new_tokens)
        for i, reply in zip(chunk, replies, strict=True):
            results[i] = reply
    return [r for r in results if r is not None]


def _greedy_batch(
    model: Any,
    suffixes: list[list[int]],
    shared: int,
    prefix_cache: Any,
    pad: int,
    eos_ids: set[int],
    max_new_tokens: int,
) -> list[tuple[list[int], str]]:
    """Each row's reply tokens (without the end token) and finish reason. Rows are laid out as
    [shared prefix, from the cache][left padding][own suffix]; the attention mask hides the
    padding and the positions count real tokens only, so every row sees what it would alone."""
    import copy

    import torch

    device = model.device
    names = _forward_names(model)
    width = max(len(s) for s in suffixes)
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
        for step in range(max_new_tokens):
            logits = model(
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
            if not going or step == max_new_tokens - 1:
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
