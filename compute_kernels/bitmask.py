"""The grammar's packed token bitmask applied to logits: the torch reference (any device).

Row r of the int32 bitmask [num_rows, ceil(vocab / 32)] allows token t when bit t % 32 of
word t // 32 is set (the layout of grammar.allocate_bitmask); a token past the last word is
not allowed. The Triton kernel with this signature is `compute_kernels.triton.bitmask`.
"""

from __future__ import annotations

import torch


def apply_token_bitmask(logits: torch.Tensor, bitmask: torch.Tensor) -> None:
    """logits [num_rows, vocab] masked in place: disallowed tokens become -inf."""
    num_rows, vocab = logits.shape
    shifts = torch.arange(32, dtype=torch.int32, device=bitmask.device)
    bits = ((bitmask.unsqueeze(-1) >> shifts) & 1).bool().flatten(1)  # [num_rows, words * 32]
    allowed = torch.zeros(num_rows, vocab, dtype=torch.bool, device=logits.device)
    width = min(vocab, bits.shape[1])
    allowed[:, :width] = bits[:, :width].to(logits.device)
    logits.masked_fill_(~allowed, float("-inf"))
