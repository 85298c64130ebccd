"""Sizes the KV cache on CUDA: a profiling forward pass at the step's token budget, then the cache
takes what `gpu_memory_utilization` of the device leaves (the rule vLLM's users expect).

budget = total * utilization - (memory in use after loading: weights, CUDA context, other
processes) - (the forward pass's and the sampler's peak above that) - a reserve for graphs.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from compute_kernels import build_attention_metadata

GRAPH_RESERVE_BYTES = 256 << 20  # the decode graphs' own pool (decode activations are small)


@dataclass(frozen=True, slots=True)
class MemoryProfile:
    total: int  # the device's bytes
    in_use: int  # bytes used on the device after loading, this process and others
    peak_activations: int  # the profiling step's peak above what was allocated before it
    num_blocks: int


def bytes_per_block(kv_shape: tuple[int, int, int], block_size: int, dtype: torch.dtype) -> int:
    num_layers, num_kv_heads, head_dim = kv_shape
    return 2 * num_layers * block_size * num_kv_heads * head_dim * dtype.itemsize


def profile_step(model, num_tokens: int, num_rows: int, block_size: int, max_positions: int, kv_dtype, device) -> None:
    """One prefill of `num_tokens` (split into requests no longer than the model's context) on a
    throwaway cache, then logits and a sort for `num_rows` rows, as the sampler's top-p does."""
    num_layers, num_kv_heads, head_dim = model.kv_shape
    query_lens = [min(max_positions, num_tokens - start) for start in range(0, num_tokens, max_positions)]
    blocks_per_req = -(-max(query_lens) // block_size)
    shape = (len(query_lens) * blocks_per_req * block_size, num_kv_heads, head_dim)
    caches = [(torch.empty(shape, dtype=kv_dtype, device=device), torch.empty(shape, dtype=kv_dtype, device=device))
              for _ in range(num_layers)]  # fmt: skip
    tables = torch.arange(len(query_lens) * blocks_per_req, device=device).view(len(query_lens), blocks_per_req)
    slots = torch.cat([r * blocks_per_req * block_size + torch.arange(q, device=device) for r, q in enumerate(query_lens)])
    meta = build_attention_metadata(query_lens, query_lens, tables, slots, block_size)
    positions = torch.cat([torch.arange(q, device=device) for q in query_lens])
    input_ids = torch.zeros(num_tokens, dtype=torch.long, device=device)
    hidden = model(input_ids, positions, caches, meta)
    logits = model.compute_logits(hidden[:num_rows])
    logits.sort(dim=-1, descending=True)


@torch.inference_mode()
def profile_num_blocks(model, kv_dtype: torch.dtype, block_size: int, max_num_batched_tokens: int,
                       max_num_seqs: int, utilization: float, device: torch.device) -> MemoryProfile:  # fmt: skip
    """Runs the profiling step and returns how many KV blocks fit; ValueError when none do."""
    torch.cuda.synchronize(device)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    profile_step(model, max_num_batched_tokens, min(max_num_seqs, max_num_batched_tokens), block_size,
                  model.max_position_embeddings, kv_dtype, device)  # fmt: skip
    torch.cuda.synchronize(device)
    peak = torch.cuda.max_memory_allocated(device) - before
    torch.cuda.empty_cache()
    free, total = torch.cuda.mem_get_info(device)
    return blocks_that_fit(total, total - free, peak, utilization, bytes_per_block(model.kv_shape, block_size, kv_dtype))


def blocks_that_fit(total: int, in_use: int, peak: int, utilization: float, block_bytes: int) -> MemoryProfile:
    """The KV blocks that `utilization` of `total` bytes leaves; ValueError when none fit."""
    budget = int(total * utilization) - in_use - peak - GRAPH_RESERVE_BYTES
    num_blocks = budget // block_bytes
    if num_blocks < 1:
        raise ValueError(f"gpu_memory_utilization: {utilization} of {total / 2**30:.1f} GiB leaves no room for the KV "
                         f"cache ({in_use / 2**30:.2f} GiB in use, {peak / 2**30:.2f} GiB peak activations)")  # fmt: skip
    return MemoryProfile(total, in_use, peak, int(num_blocks))
