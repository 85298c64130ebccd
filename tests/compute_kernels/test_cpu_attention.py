"""The CPU paged attention kernel against the torch reference on random block tables."""

from __future__ import annotations

import random

import pytest
import torch

from compute_kernels.attention import build_attention_metadata, paged_attention as reference
from compute_kernels.cpu.ops import paged_attention as kernel


def _random_step(rng: random.Random, num_reqs: int, block_size: int, num_blocks: int):
    query_lens, seq_lens = [], []
    for _ in range(num_reqs):
        q = rng.choice([1, 1, rng.randint(2, 20)])
        query_lens.append(q)
        seq_lens.append(q + rng.randint(0, 60))
    max_blocks = max(-(-s // block_size) for s in seq_lens)
    table = torch.randperm(num_blocks)[: num_reqs * max_blocks].view(num_reqs, max_blocks)
    slots = [int(table[r, p // block_size]) * block_size + p % block_size
             for r in range(num_reqs) for p in range(seq_lens[r] - query_lens[r], seq_lens[r])]  # fmt: skip
    return build_attention_metadata(query_lens, seq_lens, table, torch.tensor(slots), block_size)


@pytest.mark.parametrize("seed", range(32))
def test_attention_matches_reference(cpu_ops, seed):
    rng = random.Random(seed)
    torch.manual_seed(seed)
    heads, kv_heads = rng.choice([(4, 2), (9, 3), (4, 4), (8, 1)])
    head_dim, block_size = rng.choice([16, 24, 64, 80, 96, 128]), rng.choice([4, 16])
    dtype = rng.choice([torch.float32, torch.bfloat16, torch.float16])
    window = rng.choice([None, None, 5, 30])
    meta = _random_step(rng, rng.randint(1, 5), block_size, num_blocks=128)
    k_cache = torch.randn(128 * block_size, kv_heads, head_dim).to(dtype)
    v_cache = torch.randn(128 * block_size, kv_heads, head_dim).to(dtype)
    q = torch.randn(sum(meta.query_lens), heads, head_dim)
    want = reference(q, k_cache.float(), v_cache.float(), meta, 0.3, sliding_window=window)
    got = kernel(q, k_cache, v_cache, meta, 0.3, sliding_window=window)
    assert (got - want).abs().max() < 2e-5


def test_attention_of_a_single_key_is_its_value(cpu_ops):
    meta = build_attention_metadata([1], [1], torch.tensor([[2]]), torch.tensor([32]), 16)
    k_cache, v_cache = torch.randn(64, 2, 8), torch.randn(64, 2, 8)
    out = kernel(torch.randn(1, 4, 8), k_cache, v_cache, meta, 1.0)
    assert torch.allclose(out[0, :2], v_cache[32, 0].expand(2, 8))
    assert torch.allclose(out[0, 2:], v_cache[32, 1].expand(2, 8))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("window", [None, 7])
@pytest.mark.parametrize("heads,kv_heads", [(4, 2), (9, 3)])
def test_a_token_does_not_depend_on_its_step(cpu_ops, window, dtype, heads, kv_heads):
    """A token's output is bit-equal whether it is a decode (keys read in place from the cache),
    part of a prefill chunk, or batched; with the default model's bfloat16 cache and GQA group of 3 too."""
    torch.manual_seed(3)
    block_size = 4
    k_cache, v_cache = torch.randn(256, kv_heads, 64).to(dtype), torch.randn(256, kv_heads, 64).to(dtype)
    table = torch.arange(20).view(1, 20)
    q = torch.randn(70, heads, 64)

    def run(query_lens, seq_lens, tables, rows):
        starts = [s - ql for ql, s in zip(query_lens, seq_lens)]
        slots = [int(tables[r, p // block_size]) * block_size + p % block_size
                 for r in range(len(query_lens)) for p in range(starts[r], seq_lens[r])]  # fmt: skip
        meta = build_attention_metadata(query_lens, seq_lens, tables, torch.tensor(slots), block_size)
        return kernel(q[rows], k_cache, v_cache, meta, 0.125, sliding_window=window)

    decode = run([1], [70], table, [69])[0]
    prefill = run([70], [70], table, list(range(70)))[69]
    chunk = run([5], [70], table, list(range(65, 70)))[4]
    other = torch.arange(20, 40).view(1, 20)
    batched = run([3, 1], [40, 70], torch.cat([other, table]), [0, 1, 2, 69])[3]
    assert torch.equal(decode, prefill) and torch.equal(decode, chunk) and torch.equal(decode, batched)


@pytest.mark.parametrize("head_dim", [64, 128, 256])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_large_batch_matches_the_reference_and_each_request_alone(cpu_ops, head_dim, dtype):
    """40 decodes and a 21-token prefill: with 4 items a thread or more a work item takes every KV
    head of its tile (on one thread, here), values are read in place for a decode's group and from
    the converted chunk for the prefill's tiles; each request's rows equal its rows run alone."""
    torch.manual_seed(head_dim)
    block_size, kv_heads, heads = 16, 3, 9
    query_lens, seq_lens = [1] * 40 + [21], list(range(50, 90)) + [70]
    table = torch.randperm(41 * 6).view(41, 6)
    k_cache = torch.randn(41 * 6 * block_size, kv_heads, head_dim).to(dtype)
    v_cache = torch.randn(41 * 6 * block_size, kv_heads, head_dim).to(dtype)
    q = torch.randn(sum(query_lens), heads, head_dim)

    def run(reqs):
        starts = [seq_lens[r] - query_lens[r] for r in reqs]
        slots = [int(table[r, p // block_size]) * block_size + p % block_size
                 for r, s in zip(reqs, starts) for p in range(s, seq_lens[r])]  # fmt: skip
        meta = build_attention_metadata([query_lens[r] for r in reqs], [seq_lens[r] for r in reqs], table[reqs],
                                        torch.tensor(slots), block_size)  # fmt: skip
        rows = [sum(query_lens[:r]) + i for r in reqs for i in range(query_lens[r])]
        return kernel(q[rows], k_cache, v_cache, meta, 0.125), reference(q[rows], k_cache.float(), v_cache.float(), meta, 0.125)

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        got, want = run(list(range(41)))
    finally:
        torch.set_num_threads(threads)
    assert (got - want).abs().max() < 2e-5
    for r in (0, 17, 40):
        alone, _ = run([r])
        first = sum(query_lens[:r])
        assert torch.equal(got[first : first + query_lens[r]], alone)
