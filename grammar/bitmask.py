"""Token bitmask tensors: allocation and application to logits (torch)."""

from __future__ import annotations

import torch

from grammar.vocab import Vocabulary


def allocate_bitmask(batch_size: int, vocab: Vocabulary) -> torch.Tensor:
    """int32 [batch_size, ceil(vocab_size / 32)], all tokens allowed (-1) until filled."""
    return torch.full((batch_size, vocab.num_words), -1, dtype=torch.int32)


def unpack_bitmask(bitmask: torch.Tensor, width: int) -> torch.Tensor:
    """int32 [batch, num_words] -> bool [batch, width]; columns past the mask are False."""
    shifts = torch.arange(32, device=bitmask.device, dtype=torch.int32)
    bits = ((bitmask.unsqueeze(-1) >> shifts) & 1).bool().flatten(1)  # [batch, num_words * 32]
    if bits.shape[1] >= width:
        return bits[:, :width]
    pad = torch.zeros(bits.shape[0], width - bits.shape[1], dtype=torch.bool, device=bits.device)
    return torch.cat([bits, pad], dim=1)


def apply_bitmask(logits: torch.Tensor, bitmask: torch.Tensor) -> None:
    """Set logits of disallowed tokens to -inf in place; logits [batch, vocab], bitmask [batch, words]."""
    allowed = unpack_bitmask(bitmask.to(logits.device), logits.shape[-1])  # [batch, vocab]
    logits.masked_fill_(~allowed, float("-inf"))
