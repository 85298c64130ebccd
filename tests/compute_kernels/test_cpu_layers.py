"""The CPU row kernels (RMSNorm, rotary, SiLU gate, KV write) against their torch references."""

from __future__ import annotations

import pytest
import torch

from compute_kernels.cpu.ops import KV_KINDS, ptr
from compute_kernels.layers import apply_rotary, rms_norm, rotary_cos_sin, silu_and_mul


@pytest.mark.parametrize("rows", [1, 3, 300])
def test_rms_norm(cpu_ops, rows):
    x, w = torch.randn(rows, 96) * 3, torch.randn(96)
    out = torch.empty(rows, 96)
    cpu_ops.rms_norm(ptr(x), 96, ptr(w), 1e-5, rows, 96, ptr(out), 96)
    assert torch.allclose(out, rms_norm(x, w, 1e-5), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("rows", [1, 5, 400])
def test_rotary_in_place(cpu_ops, rows):
    cos, sin = rotary_cos_sin(16, 1024, 10000.0)
    positions = torch.randint(0, 1024, (rows,))
    x = torch.randn(rows, 6, 16)
    want = apply_rotary(x, cos[positions], sin[positions])
    got = x.clone()
    cpu_ops.rotary(ptr(got), 96, rows, 6, 16, ptr(positions), ptr(cos), ptr(sin))
    assert torch.allclose(got, want, atol=1e-6)


@pytest.mark.parametrize("rows", [1, 2, 200])
def test_silu_mul(cpu_ops, rows):
    gu = torch.randn(rows, 2 * 52) * 8
    out = torch.empty(rows, 52)
    cpu_ops.silu_mul(ptr(gu), rows, 52, ptr(out))
    assert torch.allclose(out, silu_and_mul(gu), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_kv_write_converts_and_skips_padding(cpu_ops, dtype):
    k_cache, v_cache = torch.zeros(32, 2, 8, dtype=dtype), torch.zeros(32, 2, 8, dtype=dtype)
    kv = torch.randn(3, 3 * 16)  # rows of [q? no: k | v | pad] with a wider row stride
    k, v = kv[:, :16], kv[:, 16:32]
    slots = torch.tensor([5, -1, 30])
    cpu_ops.kv_write(KV_KINDS[dtype], ptr(k_cache), ptr(v_cache), ptr(k), ptr(v), 48, ptr(slots), 3, 2, 8)
    assert torch.equal(k_cache[5], k[0].view(2, 8).to(dtype))
    assert torch.equal(v_cache[30], v[2].view(2, 8).to(dtype))
    assert k_cache[[i for i in range(32) if i not in (5, 30)]].abs().sum() == 0


@pytest.mark.parametrize("rows,n", [(1, 5), (1, 49152), (3, 17), (64, 1000)])
def test_argmax_matches_torch(cpu_ops, rows, n):
    from compute_kernels.cpu.ops import argmax

    x = torch.randn(rows, n)
    x[0, n // 2] = x[0, n - 1] = x[0].max() + 1  # ties: the first index wins
    assert torch.equal(argmax(x), x.argmax(-1))
    x[-1, 3 % n] = float("nan")
    assert torch.equal(argmax(x), x.argmax(-1))
    wide = torch.randn(rows, n + 7)[:, :n]  # rows with a stride
    assert torch.equal(argmax(wide), wide.argmax(-1))


@pytest.mark.parametrize(("rows", "vocab", "words"), [(1, 100, 4), (3, 64, 2), (2, 70, 2), (5, 1000, 32)])
def test_token_bitmask_equals_the_reference(cpu_ops, rows, vocab, words):
    """Random packed rows (some words all ones, some all zeros), a vocabulary past the mask's
    last word or short of it: the C apply and the torch reference mask the same logits."""
    from compute_kernels.bitmask import apply_token_bitmask as reference
    from compute_kernels.cpu.ops import apply_token_bitmask

    gen = torch.Generator().manual_seed(rows * vocab)
    bitmask = torch.randint(-(2**31), 2**31 - 1, (rows, words), dtype=torch.int32, generator=gen)
    bitmask[:, 0] = -1
    if words > 1:
        bitmask[0, 1] = 0
    logits = torch.randn(rows, vocab, generator=gen)
    want, got = logits.clone(), logits.clone()
    reference(want, bitmask)
    apply_token_bitmask(got, bitmask)
    assert torch.equal(want, got)
