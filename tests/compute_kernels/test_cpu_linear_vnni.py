"""The AVX512-VNNI linear (compute_kernels/cpu/csrc/linear_vnni.c) against its reference:
linear_ref of the activations as fixed point (compute_kernels.quant.fixed_point_ref)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from compute_kernels.cpu.ops import linear, linear_args, ptr, vnni_available, with_vnni
from compute_kernels.quant import fixed_point_ref, linear_ref, pack, quantize, reconstruct

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


def _bounds(w):
    from engine.runner.greedy_head import column_bounds

    col = column_bounds(w)
    return col, col.amax(0).contiguous()


@pytest.mark.parametrize("digits", [3, 2])
@pytest.mark.parametrize("kind", ["int8", "int4"])
def test_bounded_argmax_is_the_full_logits_argmax(cpu_ops, kind, digits):
    """The greedy pick from 1-digit logits and exact candidates equals argmax of the full linear:
    where the cheap logits alone pick wrong, on exact ties (the first index), with masked tokens."""
    from compute_kernels.cpu.ops import argmax, bounded_argmax

    torch.manual_seed(11 + digits)
    n, k, m = 517, 96, 48
    weight = torch.randn(n, k)
    weight[300] = weight[40]  # a duplicated column: exact ties, the full argmax takes 40
    grid = quantize(weight, 4 if kind == "int4" else 8)
    x = torch.randn(m, k) * torch.rand(m, k) * 3
    x[5] = 0.0  # every logit the bias
    x[6] = x[7] * 1e-3  # a tiny row
    x[8] = reconstruct(*grid)[40] * 2  # aimed at the tie
    bias = torch.randn(n) * 0.1
    bias[300] = bias[40]
    w = with_vnni(pack(kind, weight, bias, grid=grid), digits)
    exact, cheap = linear(x, w), linear(x, dataclasses.replace(w, digits=1))
    col, group = _bounds(w)
    assert exact[8, 40] == exact[8, 300] and int(argmax(exact)[8]) == 40
    assert bounded_argmax(x, w, cheap.clone(), col, group, 2.0).tolist() == argmax(exact).tolist()
    # a bias that puts a second column just under a row's best, by half the two columns'
    # difference in cheap error: there the cheap pass alone picks the wrong column
    wrong = 0
    for r in range(10, 30):
        err = cheap[r] - exact[r]
        t = int(exact[r].argmax())
        gap = err - err[t]
        gap[t] = float("-inf")
        b = int(gap.argmax())
        bias = w.bias.clone()
        bias[b] += float(exact[r, t] - exact[r, b] - gap[b] / 2)
        wb = dataclasses.replace(w, bias=bias)
        e, c = linear(x[r : r + 1], wb), linear(x[r : r + 1], dataclasses.replace(wb, digits=1))
        wrong += int(argmax(c)[0] != argmax(e)[0])
        assert bounded_argmax(x[r : r + 1], wb, c, col, group, 2.0).tolist() == argmax(e).tolist()
    assert wrong >= 15  # the cheap pass alone picked wrong
    # masks: a row's best token masked out in both: the next best, exactly
    masked, full = cheap.clone(), exact.clone()
    best = argmax(exact)
    for r in range(0, m, 3):
        masked[r, best[r]] = full[r, best[r]] = float("-inf")
    assert bounded_argmax(x, w, masked, col, group, 2.0).tolist() == argmax(full).tolist()
    # nothing finite, or a NaN: the caller computes the row in full
    masked[1] = float("-inf")
    masked[2, 7] = float("nan")
    out = bounded_argmax(x, w, masked, col, group, 2.0)
    assert out[1] == -1 and out[2] == -1


def test_bounded_argmax_refuses_what_it_cannot_read(cpu_ops):
    from compute_kernels.cpu.ops import bounded_argmax

    weight = torch.randn(40, 64)
    plain = pack("int8", weight, grid=quantize(weight, 8))
    w = with_vnni(plain, 3)
    col, group = _bounds(w)
    x = torch.randn(2, 64)
    with pytest.raises(ValueError, match="VNNI layout"):
        bounded_argmax(x, plain, torch.zeros(2, 40), col, group, 2.0)
    with pytest.raises(ValueError, match="cheap logits"):
        bounded_argmax(x, w, torch.zeros(3, 40), col, group, 2.0)
    with pytest.raises(ValueError, match="bounds"):
        bounded_argmax(x, w, torch.zeros(2, 40), col[:10], group, 2.0)
