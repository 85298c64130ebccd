"""The grammar's packed token bitmask applied to logits in Triton, in place.

Row r of the int32 bitmask [num_rows, ceil(vocab / 32)] allows token t when bit t % 32 of
word t // 32 is set (grammar.allocate_bitmask's layout); a token past the last word is not
allowed. Disallowed logits become -inf. Same signature and result as
`compute_kernels.bitmask.apply_token_bitmask`.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _bitmask_kernel(logits_ptr, bitmask_ptr, stride_l, stride_b, vocab, num_words, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    ok = cols < vocab
    words = cols // 32
    packed = tl.load(bitmask_ptr + row * stride_b + words, mask=ok & (words < num_words), other=0)
    allowed = ((packed >> (cols % 32)) & 1) != 0
    tl.store(logits_ptr + row * stride_l + cols, float("-inf"), mask=ok & ~allowed)


def apply_token_bitmask(logits: torch.Tensor, bitmask: torch.Tensor) -> None:
    """logits [num_rows, vocab] (float, unit column stride) masked in place by bitmask [num_rows, words]."""
    if logits.dim() != 2 or logits.stride(1) != 1 or bitmask.dtype != torch.int32 or bitmask.stride(1) != 1:
        raise ValueError("apply_token_bitmask: logits [rows, vocab] and an int32 bitmask, unit column strides")
    if bitmask.shape[0] != logits.shape[0]:
        raise ValueError(f"apply_token_bitmask: {bitmask.shape[0]} bitmask rows for {logits.shape[0]} logit rows")
    num_rows, vocab = logits.shape
    if num_rows:
        _bitmask_kernel[(num_rows, triton.cdiv(vocab, BLOCK))](
            logits, bitmask, logits.stride(0), bitmask.stride(0), vocab, bitmask.shape[1], BLOCK=BLOCK
        )
