"""Rotary position embedding in Triton, applied in place to q and k (rotate-half layout).

One program per token rotates all its query and key heads with that token's cos/sin row.
In float16/bfloat16 each product and the sum are rounded to the input dtype, as the torch
reference (`compute_kernels.layers.apply_rotary_qk`) computes them, so the two agree bit for bit.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _rotate(x_ptr, stride_t, stride_h, token, c1, c2, s1, s2,
            NUM_HEADS: tl.constexpr, HALF: tl.constexpr, HEADS_PAD: tl.constexpr, HALF_PAD: tl.constexpr):  # fmt: skip
    heads = tl.arange(0, HEADS_PAD)
    dims = tl.arange(0, HALF_PAD)
    ok = (heads[:, None] < NUM_HEADS) & (dims[None, :] < HALF)
    first = x_ptr + token * stride_t + heads[:, None] * stride_h + dims[None, :]
    x1 = tl.load(first, mask=ok, other=0.0)
    x2 = tl.load(first + HALF, mask=ok, other=0.0)
    dtype = x1.dtype
    a1 = (x1.to(tl.float32) * c1[None, :]).to(dtype).to(tl.float32)
    b1 = (x2.to(tl.float32) * s1[None, :]).to(dtype).to(tl.float32)
    a2 = (x2.to(tl.float32) * c2[None, :]).to(dtype).to(tl.float32)
    b2 = (x1.to(tl.float32) * s2[None, :]).to(dtype).to(tl.float32)
    tl.store(first, (a1 - b1).to(dtype), mask=ok)
    tl.store(first + HALF, (a2 + b2).to(dtype), mask=ok)


@triton.jit
def _rotary_kernel(
    q_ptr, k_ptr, cos_ptr, sin_ptr, stride_qt, stride_qh, stride_kt, stride_kh, stride_ct, stride_st,
    NUM_Q_HEADS: tl.constexpr, NUM_K_HEADS: tl.constexpr, HALF: tl.constexpr,
    Q_PAD: tl.constexpr, K_PAD: tl.constexpr, HALF_PAD: tl.constexpr,
):  # fmt: skip
    token = tl.program_id(0).to(tl.int64)
    dims = tl.arange(0, HALF_PAD)
    ok = dims < HALF
    # cos/sin are cast to the activations' dtype first, as the reference does
    dtype = q_ptr.dtype.element_ty
    c1 = tl.load(cos_ptr + token * stride_ct + dims, mask=ok, other=0.0).to(dtype).to(tl.float32)
    c2 = tl.load(cos_ptr + token * stride_ct + HALF + dims, mask=ok, other=0.0).to(dtype).to(tl.float32)
    s1 = tl.load(sin_ptr + token * stride_st + dims, mask=ok, other=0.0).to(dtype).to(tl.float32)
    s2 = tl.load(sin_ptr + token * stride_st + HALF + dims, mask=ok, other=0.0).to(dtype).to(tl.float32)
    _rotate(q_ptr, stride_qt, stride_qh, token, c1, c2, s1, s2, NUM_Q_HEADS, HALF, Q_PAD, HALF_PAD)
    _rotate(k_ptr, stride_kt, stride_kh, token, c1, c2, s1, s2, NUM_K_HEADS, HALF, K_PAD, HALF_PAD)


def apply_rotary_qk(
    q: torch.Tensor,  # [num_tokens, num_heads, head_dim]
    k: torch.Tensor,  # [num_tokens, num_kv_heads, head_dim]
    cos: torch.Tensor,  # [num_tokens, head_dim]
    sin: torch.Tensor,  # [num_tokens, head_dim]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotates q and k in place (views into a fused projection are fine) and returns them."""
    num_tokens, num_q_heads, head_dim = q.shape
    if q.dtype != k.dtype or q.stride(2) != 1 or k.stride(2) != 1 or cos.stride(1) != 1 or sin.stride(1) != 1:
        raise ValueError("apply_rotary_qk: q and k of one dtype, unit stride along head_dim")
    if num_tokens == 0:
        return q, k
    half = head_dim // 2
    _rotary_kernel[(num_tokens,)](
        q, k, cos, sin, q.stride(0), q.stride(1), k.stride(0), k.stride(1), cos.stride(0), sin.stride(0),
        NUM_Q_HEADS=num_q_heads, NUM_K_HEADS=k.shape[1], HALF=half, Q_PAD=triton.next_power_of_2(num_q_heads),
        K_PAD=triton.next_power_of_2(k.shape[1]), HALF_PAD=triton.next_power_of_2(half),
    )  # fmt: skip
    return q, k
