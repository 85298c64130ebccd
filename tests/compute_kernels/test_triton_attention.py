"""The Triton paged attention and KV-cache write against the torch references: random block
tables, ragged query and context lengths, GQA, sliding windows, float32/float16/bfloat16."""

from __future__ import annotations

import random

import pytest
import torch

from compute_kernels.attention import build_attention_metadata
from compute_kernels.attention import paged_attention as reference
from compute_kernels.attention import write_kv_cache as reference_write
from compute_kernels.triton.kv_cache import write_kv_cache
from compute_kernels.triton.paged_attention import paged_attention

TOLERANCE = {torch.float32: 1e-4, torch.float16: 4e-3, torch.bfloat16: 3e-2}
NUM_BLOCKS = 64


def _random_step(rng: random.Random, query_lens: list[int], block_size: int, device: str):
    """Metadata for requests with these query lengths, random contexts and random (disjoint) blocks."""
    seq_lens = [q + rng.choice([0, rng.randint(1, 40)]) for q in query_lens]
    max_blocks = max(-(-s // block_size) for s in seq_lens) + rng.randint(0, 2)  # wider than needed
    table = torch.randperm(NUM_BLOCKS)[: len(query_lens) * max_blocks].view(len(query_lens), max_blocks)
    slots = [int(table[r, p // block_size]) * block_size + p % block_size
             for r, (q, s) in enumerate(zip(query_lens, seq_lens)) for p in range(s - q, s)]  # fmt: skip
    return build_attention_metadata(query_lens, seq_lens, table.to(device), torch.tensor(slots, device=device), block_size)


CASES = [  # (heads, kv heads, head_dim, block size, dtype, window, query lengths)
    (4, 2, 16, 4, torch.bfloat16, None, [1, 1, 1]),
    (9, 3, 64, 16, torch.bfloat16, None, [1, 7, 1, 20]),
    (8, 1, 24, 4, torch.float16, 5, [1, 1, 9]),
    (4, 4, 32, 16, torch.float16, None, [17]),
    (6, 2, 16, 8, torch.float32, 30, [3, 1, 12]),
    (12, 4, 16, 4, torch.bfloat16, 9, [1, 1, 1, 1, 1]),
    (2, 2, 128, 16, torch.float16, None, [1, 2]),
    (16, 2, 16, 4, torch.float32, None, [1, 5]),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_attention_matches_reference(triton_device, case):
    heads, kv_heads, head_dim, block_size, dtype, window, query_lens = CASES[case]
    rng = random.Random(case)
    torch.manual_seed(case)
    meta = _random_step(rng, query_lens, block_size, triton_device)
    k_cache = torch.randn(NUM_BLOCKS * block_size, kv_heads, head_dim).to(dtype)
    v_cache = torch.randn(NUM_BLOCKS * block_size, kv_heads, head_dim).to(dtype)
    # the query as the model has it: a view into a fused q|k|v projection
    qkv = torch.randn(sum(query_lens), (heads + 2 * kv_heads) * head_dim).to(dtype)
    q = qkv[:, : heads * head_dim].view(-1, heads, head_dim)
    cpu_meta = build_attention_metadata(meta.query_lens, meta.seq_lens, meta.block_tables.cpu(), meta.slot_mapping.cpu(), block_size)
    want = reference(q.float(), k_cache.float(), v_cache.float(), cpu_meta, 0.3, sliding_window=window)
    dev = triton_device
    got = paged_attention(q.to(dev), k_cache.to(dev), v_cache.to(dev), meta, 0.3, sliding_window=window)
    assert got.dtype == dtype and got.shape == q.shape
    assert (got.float().cpu() - want).abs().max() < TOLERANCE[dtype]


def test_a_single_key_gives_its_value(triton_device):
    meta = build_attention_metadata([1], [1], torch.tensor([[2]], device=triton_device),
                                    torch.tensor([32], device=triton_device), 16)  # fmt: skip
    k_cache, v_cache = torch.randn(64, 2, 16, device=triton_device), torch.randn(64, 2, 16, device=triton_device)
    out = paged_attention(torch.randn(1, 4, 16, device=triton_device), k_cache, v_cache, meta, 1.0)
    assert torch.allclose(out[0, :2], v_cache[32, 0].expand(2, 16))
    assert torch.allclose(out[0, 2:], v_cache[32, 1].expand(2, 16))


def test_padded_rows_of_a_captured_batch_stay_finite(triton_device):
    """A request with no context (a padded graph row) gets zeros, not NaN, and leaves the others alone."""
    dev = triton_device
    table = torch.tensor([[1, 2], [0, 0]], device=dev)
    meta = build_attention_metadata([1, 1], [20, 0], table, torch.tensor([35, -1], device=dev), 16)
    k_cache, v_cache = torch.randn(64, 1, 16, device=dev), torch.randn(64, 1, 16, device=dev)
    q = torch.randn(2, 2, 16, device=dev)
    out = paged_attention(q, k_cache, v_cache, meta, 0.25)
    alone = paged_attention(q[:1], k_cache, v_cache, build_attention_metadata([1], [20], table[:1], meta.slot_mapping[:1], 16), 0.25)
    assert torch.equal(out[1], torch.zeros_like(out[1]))
    assert torch.allclose(out[0], alone[0])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_kv_write_matches_reference_and_skips_negative_slots(triton_device, dtype):
    torch.manual_seed(1)
    num_tokens, kv_heads, head_dim = 7, 3, 24
    qkv = torch.randn(num_tokens, (6 + 2 * kv_heads) * head_dim).to(dtype)  # keys and values as views, like the model's
    key = qkv[:, 6 * head_dim : (6 + kv_heads) * head_dim].view(num_tokens, kv_heads, head_dim)
    value = qkv[:, (6 + kv_heads) * head_dim :].view(num_tokens, kv_heads, head_dim)
    slots = torch.randperm(40)[:num_tokens]
    want_k, want_v = torch.zeros(40, kv_heads, head_dim, dtype=dtype), torch.zeros(40, kv_heads, head_dim, dtype=dtype)
    reference_write(key[:5], value[:5], want_k, want_v, slots[:5])
    padded = torch.cat([slots[:5], torch.tensor([-1, -1])])  # the last two rows are padding
    dev = triton_device
    got_k, got_v = torch.zeros_like(want_k, device=dev), torch.zeros_like(want_v, device=dev)
    write_kv_cache(key.to(dev), value.to(dev), got_k, got_v, padded.to(dev))
    assert torch.equal(got_k.cpu(), want_k) and torch.equal(got_v.cpu(), want_v)
