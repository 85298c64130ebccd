"""The KV-cache write in Triton: each new token's keys and values into its flat cache slot.

Same signature and result as `compute_kernels.attention.write_kv_cache`. A negative slot writes
nothing (a padded row of a captured batch may carry one).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _write_kernel(
    key_ptr, value_ptr, k_cache_ptr, v_cache_ptr, slot_ptr,
    stride_kt, stride_kh, stride_vt, stride_vh, stride_ct, stride_ch, stride_dt, stride_dh,
    HEAD_DIM: tl.constexpr, NUM_HEADS: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    token = tl.program_id(0)
    slot = tl.load(slot_ptr + token).to(tl.int64)
    if slot >= 0:
        i = tl.arange(0, BLOCK)
        ok = i < NUM_HEADS * HEAD_DIM
        head, dim = i // HEAD_DIM, i % HEAD_DIM
        k = tl.load(key_ptr + token * stride_kt + head * stride_kh + dim, mask=ok)
        v = tl.load(value_ptr + token * stride_vt + head * stride_vh + dim, mask=ok)
        tl.store(k_cache_ptr + slot * stride_ct + head * stride_ch + dim, k.to(k_cache_ptr.dtype.element_ty), mask=ok)
        tl.store(v_cache_ptr + slot * stride_dt + head * stride_dh + dim, v.to(v_cache_ptr.dtype.element_ty), mask=ok)


def write_kv_cache(
    key: torch.Tensor,  # [num_tokens, num_kv_heads, head_dim]
    value: torch.Tensor,  # [num_tokens, num_kv_heads, head_dim]
    k_cache: torch.Tensor,  # [num_blocks * block_size, num_kv_heads, head_dim]
    v_cache: torch.Tensor,
    slot_mapping: torch.Tensor,  # [num_tokens]
) -> None:
    num_tokens, num_heads, head_dim = key.shape
    if num_tokens == 0:
        return
    if any(t.stride(2) != 1 for t in (key, value, k_cache, v_cache)):
        raise ValueError("write_kv_cache: keys, values and caches need a unit head_dim stride")
    _write_kernel[(num_tokens,)](
        key, value, k_cache, v_cache, slot_mapping,
        key.stride(0), key.stride(1), value.stride(0), value.stride(1),
        k_cache.stride(0), k_cache.stride(1), v_cache.stride(0), v_cache.stride(1),
        HEAD_DIM=head_dim, NUM_HEADS=num_heads, BLOCK=triton.next_power_of_2(num_heads * head_dim),
    )  # fmt: skip
