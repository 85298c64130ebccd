"""The AVX512-VNNI linear (compute_kernels/cpu/csrc/linear_vnni.c) against its reference:
linear_ref of the activations as fixed point (compute_kernels.quant.fixed_point_ref)."""

from __future__ import annotations

import pytest
import torch

from compute_kernels.cpu.ops import linear, linear_args, ptr, vnni_available, with_vnni
from compute_kernels.quant import fixed_point_ref, linear_ref, pack, quantize

pytestmark = pytest.mark.skipif(not vnni_available(), reason="the CPU (or the kernels' build) has no AVX512-VNNI")

# rows cover one to four-row tiles, tails, and more than one 64-row block; columns an odd
# number of panels (a last pair of one panel) and a ragged last panel
SHAPES = [(1, 960, 576), (2, 40, 64), (3, 17, 32), (4, 33, 64), (5, 100, 96), (7, 48, 160), (64, 64, 64),
          (66, 50, 128), (130, 24, 96)]  # fmt: skip


def _packed(kind: str, n: int, k: int, bias: bool, digits: int):
    w = torch.randn(n, k)
    grid = quantize(w, 4 if kind == "int4" else 8)
    return with_vnni(pack(kind, w, torch.randn(n) if bias else None, grid=grid), digits)


@pytest.mark.parametrize("digits", [3, 2, 1])
@pytest.mark.parametrize("kind", ["int8", "int4"])
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_vnni_linear_matches_fixed_point_reference(cpu_ops, kind, digits, m, n, k):
    torch.manual_seed(m * 1000 + n + k)
    w = _packed(kind, n, k, bias=m % 2 == 0, digits=digits)
    x = torch.randn(m, k) * torch.rand(m, k) * 4  # groups of mixed magnitudes
    x[0, :32] = 0.0  # an all-zero group: scale 0
    ref = linear_ref(fixed_point_ref(x, digits), w)
    out = linear(x, w)
    assert out.shape == (m, n)
    assert (out - ref).abs().max() <= 1e-5 * ref.abs().max()


@pytest.mark.parametrize("kind", ["int8", "int4"])
def test_fixed_point_is_close_to_float_activations(cpu_ops, kind):
    """Three digits: every input off by at most 2^-24 of its group's largest, float32's own
    rounding; two: 2^-16; one digit (llama.cpp's 8-bit scheme) much coarser."""
    torch.manual_seed(3)
    weight = torch.randn(96, 576)
    base = pack(kind, weight, grid=quantize(weight, 4 if kind == "int4" else 8))
    x = torch.randn(9, 576)
    exact = linear_ref(x, base)
    err24 = (linear(x, with_vnni(base, 3)) - exact).abs().max()
    err16 = (linear(x, with_vnni(base, 2)) - exact).abs().max()
    err8 = (linear(x, with_vnni(base, 1)) - exact).abs().max()
    assert err24 <= 1e-6 * exact.abs().max()
    assert err16 <= 5e-5 * exact.abs().max()
    assert err8 > 10 * err16 and err16 > 10 * err24


@pytest.mark.parametrize("digits", [3, 2, 1])
@pytest.mark.parametrize("kind", ["int8", "int4"])
def test_a_row_does_not_depend_on_its_batch(cpu_ops, kind, digits):
    """Bit-equal rows whatever the batch: a row's integers depend on it alone, integer sums on no order."""
    torch.manual_seed(7)
    w = _packed(kind, 50, 128, bias=True, digits=digits)
    x = torch.randn(130, 128)
    alone = linear(x[:1], w)
    for m in (2, 3, 4, 5, 7, 64, 65, 130):
        assert torch.equal(linear(x[:m], w)[:1], alone), m
        assert torch.equal(linear(x[m - 1 : m], w), linear(x[:m], w)[m - 1 :]), m


def test_vnni_accumulates_into_strided_rows(cpu_ops):
    torch.manual_seed(1)
    w = _packed("int4", 24, 64, bias=True, digits=2)
    x = torch.randn(7, 64)
    base = torch.randn(7, 40)
    out = base.clone()
    cpu_ops.linear(*linear_args(w), ptr(x), 7, 64, ptr(out), 40, 1)  # accumulate into [:, :24]
    expected = base.clone()
    expected[:, :24] += linear_ref(fixed_point_ref(x, 2), w)
    assert torch.allclose(out, expected, atol=1e-5)
    assert torch.equal(out[:, 24:], base[:, 24:])


def test_float_weights_and_bad_digits(cpu_ops):
    w = pack("float32", torch.randn(8, 64))
    assert with_vnni(w, 2) is w  # nothing to repack: the float path serves it
    with pytest.raises(ValueError, match="digits"):
        with_vnni(pack("int8", torch.randn(8, 64), grid=quantize(torch.randn(8, 64), 8)), 4)
