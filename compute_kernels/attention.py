"""Attention through block tables: KV cache writes and reads for one flattened batch of tokens.

The batch mixes prefill chunks and decodes. This is the torch reference (any device): it
batches all decode requests (one query token each) into one masked attention call, and runs
each prefill chunk on its own. The CPU kernel with the same signature is
`compute_kernels.cpu.ops.paged_attention`; `compute_kernels.paged_attention` picks by the step's metadata.
Everything a step needs to address the cache is computed once per step in
`build_attention_metadata`, then shared by every layer.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(slots=True)
class TorchAttentionPlan:
    """How the torch reference reads the cache this step (gathers of cache rows), shared by layers."""

    decode_rows: torch.Tensor  # [num_decodes] token rows that are single-token decodes
    decode_kv_index: torch.Tensor  # [num_decodes, max_decode_len] flat cache slots read
    decode_mask: torch.Tensor  # [num_decodes, 1, 1, max_decode_len] True = attend
    prefills: list[tuple[int, int, torch.Tensor]]  # (query start, query len, kv slots [seq_len])


@dataclass(slots=True)
class AttentionMetadata:
    """Per-step addressing of the KV cache, shared by every layer.

    `query_start`, `seq_lens_t`, `block_tables` and `slot_mapping` are what the CPU kernels
    read in place; the torch reference derives its gather plan from them once per step.
    `use_cpu_kernels` picks the implementation behind `compute_kernels.paged_attention`.
    """

    query_lens: list[int]
    seq_lens: list[int]
    query_start: torch.Tensor  # [num_reqs + 1] int64 first token row of each request
    seq_lens_t: torch.Tensor  # [num_reqs] int64 context length after this step
    block_tables: torch.Tensor  # [num_reqs, max_blocks_per_req] int64
    slot_mapping: torch.Tensor  # [num_tokens] int64 flat cache slot of each new token
    block_size: int
    use_cpu_kernels: bool = False
    sliding_window: int | None = None  # the kernels' default window (a layer may pass its own)
    _plan: TorchAttentionPlan | None = None

    @property
    def torch_plan(self) -> TorchAttentionPlan:
        if self._plan is None:
            self._plan = _torch_plan(self)
        return self._plan


def _kv_slots(block_table_row: torch.Tensor, length: int, block_size: int) -> torch.Tensor:
    positions = torch.arange(length, device=block_table_row.device)
    return block_table_row[positions // block_size].long() * block_size + positions % block_size


def build_attention_metadata(
    query_lens: list[int],
    seq_lens: list[int],
    block_tables: torch.Tensor,  # [num_reqs, max_blocks_per_req]
    slot_mapping: torch.Tensor,  # [num_tokens]
    block_size: int,
    use_cpu_kernels: bool = False,
) -> AttentionMetadata:
    """Plans one step: where each request's queries start and which cache slots they own."""
    device = block_tables.device
    starts = [0] * (len(query_lens) + 1)
    for i, q in enumerate(query_lens):
        starts[i + 1] = starts[i] + q
    return AttentionMetadata(
        list(query_lens), list(seq_lens),
        torch.tensor(starts, dtype=torch.long, device=device),
        torch.tensor(seq_lens, dtype=torch.long, device=device),
        block_tables.long().contiguous(), slot_mapping.long().contiguous(), block_size, use_cpu_kernels,
    )  # fmt: skip


def _torch_plan(meta: AttentionMetadata) -> TorchAttentionPlan:
    """Which rows decode together and which cache slots each query reads, for the torch path."""
    query_lens, seq_lens, block_tables, block_size = meta.query_lens, meta.seq_lens, meta.block_tables, meta.block_size
    device = block_tables.device
    starts = meta.query_start.tolist()
    decode_reqs = [i for i, q in enumerate(query_lens) if q == 1]
    prefills = [
        (starts[i], query_lens[i], _kv_slots(block_tables[i], seq_lens[i], block_size))
        for i, q in enumerate(query_lens)
        if q > 1
    ]
    if decode_reqs:
        idx = torch.tensor(decode_reqs, device=device)
        lens = torch.tensor([seq_lens[i] for i in decode_reqs], device=device)  # [num_decodes]
        max_len = int(lens.max())
        positions = torch.arange(max_len, device=device)  # [max_decode_len]
        mask = positions.unsqueeze(0) < lens.unsqueeze(1)  # [num_decodes, max_decode_len]
        blocks = block_tables[idx][:, positions // block_size].long()  # [num_decodes, max_decode_len]
        kv_index = torch.where(mask, blocks * block_size + positions % block_size, 0)
        decode_rows = torch.tensor([starts[i] for i in decode_reqs], device=device)
        decode_mask = mask[:, None, None, :]
    else:
        decode_rows = torch.empty(0, dtype=torch.long, device=device)
        kv_index = torch.empty(0, 0, dtype=torch.long, device=device)
        decode_mask = torch.empty(0, 1, 1, 0, dtype=torch.bool, device=device)
    return TorchAttentionPlan(decode_rows, kv_index, decode_mask, prefills)


def write_kv_cache(
    key: torch.Tensor,  # [num_tokens, num_kv_heads, head_dim]
    value: torch.Tensor,  # [num_tokens, num_kv_heads, head_dim]
    k_cache: torch.Tensor,  # [num_blocks * block_size, num_kv_heads, head_dim]
    v_cache: torch.Tensor,
    slot_mapping: torch.Tensor,  # [num_tokens]
) -> None:
    k_cache.index_copy_(0, slot_mapping, key.to(k_cache.dtype))
    v_cache.index_copy_(0, slot_mapping, value.to(v_cache.dtype))


def paged_attention(
    query: torch.Tensor,  # [num_tokens, num_heads, head_dim]
    k_cache: torch.Tensor,  # [num_blocks * block_size, num_kv_heads, head_dim]
    v_cache: torch.Tensor,
    meta: AttentionMetadata,
    scale: float,
    sliding_window: int | None = None,
) -> torch.Tensor:
    """Causal attention of every new token over its request's cached context.

    `sliding_window` W limits each query at position p to keys at positions > p - W.
    """
    out = torch.empty_like(query)
    gqa = query.shape[1] != k_cache.shape[1]
    plan = meta.torch_plan
    if plan.decode_rows.numel():
        num_decodes, max_len = plan.decode_kv_index.shape
        flat_index = plan.decode_kv_index.view(-1)  # index_select: far cheaper than advanced indexing on CPU
        kv_shape = (num_decodes, max_len, k_cache.shape[1], k_cache.shape[2])
        q = query.index_select(0, plan.decode_rows).unsqueeze(2)  # [num_decodes, num_heads, 1, head_dim]
        k = k_cache.index_select(0, flat_index).view(kv_shape).transpose(1, 2)  # [num_decodes, kv_heads, max_len, head_dim]
        v = v_cache.index_select(0, flat_index).view(kv_shape).transpose(1, 2)
        mask = plan.decode_mask if sliding_window is None else _window_decode_mask(plan.decode_mask, sliding_window)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale, enable_gqa=gqa)
        out.index_copy_(0, plan.decode_rows, o.squeeze(2))
    for start, length, kv_slots in plan.prefills:
        q = query[start : start + length].transpose(0, 1)  # [num_heads, q_len, head_dim]
        k = k_cache.index_select(0, kv_slots).transpose(0, 1)  # [kv_heads, seq_len, head_dim]
        v = v_cache.index_select(0, kv_slots).transpose(0, 1)
        context = kv_slots.shape[0] - length
        if context == 0 and (sliding_window is None or sliding_window >= length):
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale, enable_gqa=gqa)
        else:
            rows = torch.arange(length, device=q.device).unsqueeze(1) + context
            cols = torch.arange(kv_slots.shape[0], device=q.device).unsqueeze(0)
            mask = cols <= rows
            if sliding_window is not None:
                mask &= cols > rows - sliding_window
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale, enable_gqa=gqa)
        out[start : start + length] = o.transpose(0, 1)
    return out


def _window_decode_mask(decode_mask: torch.Tensor, sliding_window: int) -> torch.Tensor:
    """The decode mask narrowed to each request's last `sliding_window` positions."""
    lens = decode_mask.sum(-1, keepdim=True)  # [num_decodes, 1, 1, 1]
    positions = torch.arange(decode_mask.shape[-1], device=decode_mask.device)  # [max_decode_len]
    return decode_mask & (positions >= lens - sliding_window)
