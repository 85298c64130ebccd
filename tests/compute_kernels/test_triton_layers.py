"""The Triton row kernels against their torch references: RMSNorm (alone and with the residual
add), rotary embedding in place on q and k, SiLU-and-mul; odd sizes, views, three dtypes."""

from __future__ import annotations

import pytest
import torch

from compute_kernels import layers as reference
from compute_kernels.triton.activation import silu_and_mul
from compute_kernels.triton.rms_norm import add_rms_norm, rms_norm
from compute_kernels.triton.rotary import apply_rotary_qk

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# (atol, rtol): float32 differs by summation order; bfloat16 by a rounding step (the interpreter
# rounds float32 -> bfloat16 by truncation, the GPU to nearest)
TOLERANCE = {torch.float32: (1e-5, 1e-5), torch.float16: (2e-3, 2e-3), torch.bfloat16: (3e-2, 2e-2)}


def _close(got: torch.Tensor, want: torch.Tensor) -> None:
    atol, rtol = TOLERANCE[want.dtype]
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got.cpu(), want, atol=atol, rtol=rtol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("hidden", [72, 576])
def test_rms_norm(triton_device, dtype, hidden):
    torch.manual_seed(hidden)
    x, weight = torch.randn(5, hidden).to(dtype), (1 + 0.1 * torch.randn(hidden)).to(dtype)
    _close(rms_norm(x.to(triton_device), weight.to(triton_device), 1e-6), reference.rms_norm(x, weight, 1e-6))


@pytest.mark.parametrize("dtype", DTYPES)
def test_add_rms_norm(triton_device, dtype):
    torch.manual_seed(2)
    x, residual = torch.randn(6, 200).to(dtype), torch.randn(6, 200).to(dtype)
    weight = (1 + 0.1 * torch.randn(200)).to(dtype)
    dev = triton_device
    got_out, got_residual = add_rms_norm(x.to(dev), residual.to(dev), weight.to(dev), 1e-5)
    want_out, want_residual = reference.add_rms_norm(x, residual, weight, 1e-5)
    if dtype != torch.bfloat16 or dev == "cuda":  # one rounded add: bit-equal where rounding is to nearest
        assert torch.equal(got_residual.cpu(), want_residual)
    _close(got_residual, want_residual)
    _close(got_out, want_out)


def test_rms_norm_of_per_head_views(triton_device):
    """Qwen3's q/k norm: a [tokens, heads, head_dim] view into the fused projection."""
    torch.manual_seed(3)
    qkv = torch.randn(4, 3 * 32).to(torch.bfloat16)
    q = qkv[:, 32:].view(4, 2, 32)
    weight = torch.randn(32).to(torch.bfloat16)
    _close(rms_norm(q.to(triton_device), weight.to(triton_device), 1e-6), reference.rms_norm(q, weight, 1e-6))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("heads,kv_heads,head_dim", [(9, 3, 64), (4, 1, 24)])
def test_rotary_in_place_on_views(triton_device, dtype, heads, kv_heads, head_dim):
    torch.manual_seed(heads)
    num_tokens = 7
    cos, sin = reference.rotary_cos_sin(head_dim, 64, 10000.0)
    positions = torch.randint(0, 64, (num_tokens,))
    cos, sin = cos[positions], sin[positions]
    qkv = torch.randn(num_tokens, (heads + 2 * kv_heads) * head_dim).to(dtype).to(triton_device)
    q = qkv[:, : heads * head_dim].view(num_tokens, heads, head_dim)
    k = qkv[:, heads * head_dim : (heads + kv_heads) * head_dim].view(num_tokens, kv_heads, head_dim)
    v_before = qkv[:, (heads + kv_heads) * head_dim :].clone()
    want_q, want_k = reference.apply_rotary_qk(q.cpu(), k.cpu(), cos, sin)
    got_q, got_k = apply_rotary_qk(q, k, cos.to(triton_device), sin.to(triton_device))
    assert got_q.data_ptr() == q.data_ptr() and got_k.data_ptr() == k.data_ptr()  # rotated in place
    _close(q, want_q)
    _close(k, want_k)
    assert torch.equal(qkv[:, (heads + kv_heads) * head_dim :], v_before)  # v untouched


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("intermediate", [96, 1536])
def test_silu_and_mul(triton_device, dtype, intermediate):
    torch.manual_seed(intermediate)
    gate_up = (2 * torch.randn(5, 2 * intermediate)).to(dtype)
    _close(silu_and_mul(gate_up.to(triton_device)), reference.silu_and_mul(gate_up))


def test_empty_batches(triton_device):
    x = torch.empty(0, 64, device=triton_device)
    assert rms_norm(x, torch.ones(64, device=triton_device), 1e-6).shape == (0, 64)
    assert silu_and_mul(torch.empty(0, 32, device=triton_device)).shape == (0, 16)
