"""Token bitmask tensors: allocation, application to logits (torch), and numpy views of them for writing rows."""

from __future__ import annotations

from typing import Any

import numpy as np
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


class BitmaskViews:
    """The numpy view of the last CPU bitmask tensor a matcher filled (an engine fills the rows of
    one tensor per step, one matcher per row): rows are written through it without a tensor round
    trip. One per vocabulary (grammar/compiler.py), shared by its grammars' matchers."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: tuple[Any, np.ndarray] | None = None  # (bitmask tensor, its numpy view)

    def view(self, bitmask: torch.Tensor) -> np.ndarray | None:
        """A numpy view of `bitmask` (None on an accelerator)."""
        hit = self._last
        if hit is not None and hit[0] is bitmask:
            return hit[1]
        if bitmask.device.type != "cpu":
            return None
        view = bitmask.numpy()
        self._last = (bitmask, view)
        return view
