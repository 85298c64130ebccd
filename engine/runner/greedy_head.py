"""Greedy rows' next tokens without the exact lm_head over the whole vocabulary.

A greedy row needs one thing from its logits: the first index of the largest. On the CPU kernels
the exact lm_head (24-bit fixed-point activations, three VNNI passes per weight) is 12 % of a
decode step at 64 rows. So a plain greedy row is picked in two passes, with the same result:

1. Cheap logits with 8-bit activations (one pass). Each input is off by at most half a step of its
   group's grid (amax_g / 254), so logit c is off by at most
   B_c = sum_g amax_g / 254 * sum_{k in g} |w_kc|   (per row and column, from the weights' own sums).
2. The exact argmax c* is among the columns whose cheap value + B_c reaches max_c (cheap - B_c):
   c*'s exact value is at least every other column's, and each is within B of its cheap value.
   Only those (usually 1 to 20 of 49,152) are computed exactly, by the full lm_head's own kernel
   arithmetic (bit for bit its values), and the first index of the largest is the token.

The grammar's bitmask and min_tokens' suppressed stop tokens mask step 1 (a masked token is never a
candidate). Rows that want logprobs, penalties or a logit bias, sampled rows, and rows whose
masks leave nothing finite keep the full logits (engine/sampler.py). The arithmetic is in C
(`compute_kernels/cpu/csrc/linear_vnni.c`, vnni_bounded_argmax).
"""

from __future__ import annotations

import dataclasses

import torch

from compute_kernels import apply_token_bitmask
from compute_kernels.cpu.ops import bounded_argmax, linear
from compute_kernels.quant import GROUP, PackedLinear
from engine.sampler import SamplingBatch

WINDOW = 2.0  # the prefilter: cheap >= the row's largest - WINDOW * max_c B_c (the C side adds slack for rounding)


def column_bounds(w: PackedLinear) -> torch.Tensor:
    """[n, K / GROUP]: sum |w| over each input group, per output column."""
    parts = []
    for p0 in range(0, w.data.shape[0], 256):  # a few MiB of floats at a time
        part = w.data[p0 : p0 + 256]
        if w.kind == "int8":
            q = part.float()  # [P, K/G, G, PANEL]
        else:
            q = torch.stack([(part & 15).float(), (part >> 4).float()], dim=3).flatten(2, 3)
        vals = q * w.scales[p0 : p0 + 256].float().unsqueeze(2)
        if w.mins is not None:
            vals = vals + w.mins[p0 : p0 + 256].float().unsqueeze(2)
        parts.append(vals.abs().sum(2).permute(0, 2, 1).reshape(-1, w.k // GROUP))  # [P * PANEL, K/G]
    return torch.cat(parts)[: w.n].contiguous()


class GreedyHead:
    """The two-pass greedy pick for one lm_head in the VNNI layout with 2 or 3 digits."""

    def __init__(self, lm_head: PackedLinear) -> None:
        self.exact = lm_head
        self.cheap = dataclasses.replace(lm_head, digits=1)
        self.col_bound = column_bounds(lm_head)  # [n, K / GROUP]
        self.group_bound = self.col_bound.amax(0).contiguous()  # [K / GROUP]

    @staticmethod
    def supports(lm_head) -> bool:
        return (isinstance(lm_head, PackedLinear) and lm_head.vnni is not None and lm_head.digits >= 2
                and lm_head.k % GROUP == 0)  # fmt: skip

    def pick(self, hidden: torch.Tensor, batch: SamplingBatch, rows: list[int]) -> dict[int, int]:
        """Tokens of `rows` (plain greedy rows of `batch`) from hidden [len(rows), hidden]; a row left
        out of the answer needs its full logits (its masks allow nothing finite, or a NaN)."""
        hidden = hidden.float().contiguous()
        logits = linear(hidden, self.cheap)  # [rows, vocab]
        if batch.token_bitmask is not None:
            apply_token_bitmask(logits, batch.token_bitmask[rows].contiguous())
        for i, row in enumerate(rows):
            ids = batch.suppress_ids[row]
            if ids:
                logits[i, ids] = float("-inf")
        tokens = bounded_argmax(hidden, self.exact, logits, self.col_bound, self.group_bound, WINDOW).tolist()
        return {row: t for row, t in zip(rows, tokens) if t >= 0}
