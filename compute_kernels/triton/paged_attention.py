"""Paged attention over block tables in Triton: decode and prefill with cached context in one kernel.

One program owns a tile of query tokens of one request and one KV head; its rows are the
tile's tokens times the query heads that share that KV head (GQA), so each K/V tile read
from the cache serves the whole group. Keys are read through the request's block table, a
tile at a time, with an online softmax in float32. Everything a program needs (query starts,
context lengths, block tables) is read from device tensors, so a captured CUDA graph replays
it with new lengths. Same signature and result as `compute_kernels.attention.paged_attention`.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from compute_kernels.attention import AttentionMetadata

NO_WINDOW = 1 << 30  # a window no context reaches


@triton.jit
def _dot(a, b, PRECISION: tl.constexpr, UPCAST: tl.constexpr):
    """a @ b accumulated in float32; UPCAST multiplies in float32 (exact for 16-bit inputs)."""
    if UPCAST:
        out = tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
    else:
        out = tl.dot(a, b, input_precision=PRECISION)
    return out


@triton.jit
def _attention_kernel(
    q_ptr, k_ptr, v_ptr, out_ptr, query_start_ptr, seq_lens_ptr, block_tables_ptr,
    stride_qt, stride_qh, stride_ot, stride_oh, stride_kt, stride_kh, stride_vt, stride_vh, stride_bt,
    scale, window,
    GROUP: tl.constexpr, GROUP_PAD: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_N: tl.constexpr,
    HEAD_DIM: tl.constexpr, HEAD_PAD: tl.constexpr, BLOCK_SIZE: tl.constexpr, PRECISION: tl.constexpr,
    UPCAST: tl.constexpr,
):  # fmt: skip
    req = tl.program_id(0)
    kv_head = tl.program_id(1)
    tile = tl.program_id(2)
    q_start = tl.load(query_start_ptr + req)
    q_len = tl.load(query_start_ptr + req + 1) - q_start
    if tile * BLOCK_Q < q_len:
        seq_len = tl.load(seq_lens_ptr + req)
        context = seq_len - q_len
        rows = tl.arange(0, BLOCK_Q * GROUP_PAD)
        tok = tile * BLOCK_Q + rows // GROUP_PAD  # [M] token index within the request
        head = kv_head * GROUP + rows % GROUP_PAD  # [M] query head
        row_ok = (tok < q_len) & (rows % GROUP_PAD < GROUP)
        dims = tl.arange(0, HEAD_PAD)
        dim_ok = dims < HEAD_DIM
        q_rows = (q_start + tok).to(tl.int64) * stride_qt + head * stride_qh
        q = tl.load(q_ptr + q_rows[:, None] + dims[None, :], mask=row_ok[:, None] & dim_ok[None, :], other=0.0)
        pos = context + tok  # [M] absolute position of each query
        hi = tl.minimum(context + (tile + 1) * BLOCK_Q, seq_len)  # keys past the tile's last query are masked
        lo = tl.maximum(context + tile * BLOCK_Q - window + 1, 0)
        lo = (lo // BLOCK_N) * BLOCK_N
        m_i = tl.full([BLOCK_Q * GROUP_PAD], float("-inf"), tl.float32)
        l_i = tl.zeros([BLOCK_Q * GROUP_PAD], tl.float32)
        acc = tl.zeros([BLOCK_Q * GROUP_PAD, HEAD_PAD], tl.float32)
        table = block_tables_ptr + req.to(tl.int64) * stride_bt
        for start in range(lo, hi, BLOCK_N):
            keys = start + tl.arange(0, BLOCK_N)  # [N] absolute key positions
            key_ok = keys < hi
            block = tl.load(table + keys // BLOCK_SIZE, mask=key_ok, other=0).to(tl.int64)
            slot = block * BLOCK_SIZE + keys % BLOCK_SIZE  # [N] flat cache rows
            kv_mask = key_ok[:, None] & dim_ok[None, :]
            k = tl.load(k_ptr + slot[:, None] * stride_kt + kv_head * stride_kh + dims[None, :], mask=kv_mask, other=0.0)
            s = _dot(q, tl.trans(k.to(q.dtype)), PRECISION, UPCAST) * scale  # [M, N]
            allowed = (keys[None, :] <= pos[:, None]) & (keys[None, :] > pos[:, None] - window) & key_ok[None, :]
            s = tl.where(allowed, s, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, 1))
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # rows with nothing allowed yet
            alpha = tl.exp(m_i - m_safe)
            p = tl.exp(s - m_safe[:, None])
            l_i = l_i * alpha + tl.sum(p, 1)
            v = tl.load(v_ptr + slot[:, None] * stride_vt + kv_head * stride_vh + dims[None, :], mask=kv_mask, other=0.0)
            acc = acc * alpha[:, None] + _dot(p.to(q.dtype), v.to(q.dtype), PRECISION, UPCAST)
            m_i = m_new
        out = acc / tl.where(l_i > 0, l_i, 1.0)[:, None]
        o_rows = (q_start + tok).to(tl.int64) * stride_ot + head * stride_oh
        tl.store(out_ptr + o_rows[:, None] + dims[None, :], out.to(out_ptr.dtype.element_ty),
                 mask=row_ok[:, None] & dim_ok[None, :])  # fmt: skip


def _tiles(group_pad: int, max_query_len: int) -> tuple[int, int]:
    """(query tokens per program, keys per tile): 16 rows for decode steps, 64 for prefills."""
    rows = 16 if max_query_len == 1 else 64
    return max(1, rows // group_pad), 64 if max_query_len == 1 else 32


def paged_attention(
    query: torch.Tensor,  # [num_tokens, num_heads, head_dim]
    k_cache: torch.Tensor,  # [num_blocks * block_size, num_kv_heads, head_dim]
    v_cache: torch.Tensor,
    meta: AttentionMetadata,
    scale: float,
    sliding_window: int | None = None,
) -> torch.Tensor:
    """Causal attention of every new token over its request's cached context (query's dtype out).

    Reads `meta.query_start`, `meta.seq_lens_t` and `meta.block_tables` on the device; from the
    host only the number of requests and the longest query (the launch grid).
    """
    num_tokens, num_heads, head_dim = query.shape
    num_kv_heads = k_cache.shape[1]
    if num_heads % num_kv_heads or k_cache.stride(2) != 1 or v_cache.stride(2) != 1 or query.stride(2) != 1:
        raise ValueError("paged_attention: heads must be a multiple of KV heads, with unit head_dim stride")
    out = torch.empty(num_tokens, num_heads, head_dim, dtype=query.dtype, device=query.device)
    num_reqs = meta.query_start.shape[0] - 1
    if num_tokens == 0 or num_reqs == 0:
        return out
    group = num_heads // num_kv_heads
    group_pad = triton.next_power_of_2(group)
    max_query_len = max(meta.query_lens)
    block_q, block_n = _tiles(group_pad, max_query_len)
    window = sliding_window or NO_WINDOW
    grid = (num_reqs, num_kv_heads, triton.cdiv(max_query_len, block_q))
    _attention_kernel[grid](
        query, k_cache, v_cache, out, meta.query_start, meta.seq_lens_t, meta.block_tables,
        query.stride(0), query.stride(1), out.stride(0), out.stride(1), k_cache.stride(0), k_cache.stride(1),
        v_cache.stride(0), v_cache.stride(1), meta.block_tables.stride(0), float(scale), int(window),
        GROUP=group, GROUP_PAD=group_pad, BLOCK_Q=block_q, BLOCK_N=block_n, HEAD_DIM=head_dim,
        HEAD_PAD=max(16, triton.next_power_of_2(head_dim)), BLOCK_SIZE=meta.block_size,
        PRECISION="ieee" if query.dtype == torch.float32 else "tf32",
        UPCAST=query.dtype == torch.bfloat16 and query.device.type == "cpu",  # the interpreter: no bf16 matmul
    )  # fmt: skip
    return out
