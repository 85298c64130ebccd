"""The CPU packed linear kernel against its torch reference (compute_kernels.quant.linear_ref)."""

from __future__ import annotations

import pytest
import torch

from compute_kernels.cpu.ops import linear, linear_args, ptr
from compute_kernels.quant import linear_ref, pack, quantize

SHAPES = [(1, 960, 576), (2, 40, 64), (3, 17, 32), (4, 33, 64), (5, 100, 96), (6, 16, 64), (13, 48, 160),
          (64, 64, 64), (66, 50, 128), (130, 24, 96)]  # fmt: skip


def _packed(kind: str, n: int, k: int, bias: bool):
    w = torch.randn(n, k)
    bits = {"int4": 4, "int8": 8}.get(kind)
    return pack(kind, w, torch.randn(n) if bias else None, grid=quantize(w, bits) if bits else None)


@pytest.mark.parametrize("kind", ["float32", "int8", "int4"])
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_linear_matches_reference(cpu_ops, kind, m, n, k):
    torch.manual_seed(m * 1000 + n + k)
    w = _packed(kind, n, k, bias=m % 2 == 0)
    x = torch.randn(m, k)
    ref = linear_ref(x, w)
    out = linear(x, w)
    assert out.shape == (m, n)
    assert (out - ref).abs().max() <= 1e-5 * ref.abs().max()


@pytest.mark.parametrize("kind", ["float32", "int4"])
def test_linear_accumulates_into_strided_rows(cpu_ops, kind):
    torch.manual_seed(1)
    w = _packed(kind, 24, 64, bias=True)
    x = torch.randn(7, 64)
    base = torch.randn(7, 40)
    out = base.clone()
    cpu_ops.linear(*linear_args(w), ptr(x), 7, 64, ptr(out), 40, 1)  # accumulate into [:, :24]
    expected = base.clone()
    expected[:, :24] += linear_ref(x, w)
    assert torch.allclose(out, expected, atol=1e-5)
    assert torch.equal(out[:, 24:], base[:, 24:])


def test_linear_refuses_a_wrong_width(cpu_ops):
    with pytest.raises(ValueError, match="features"):
        linear(torch.randn(2, 32), _packed("float32", 8, 64, bias=False))


@pytest.mark.parametrize("kind", ["float32", "int8", "int4"])
def test_a_row_does_not_depend_on_its_batch(cpu_ops, kind):
    """Bit-equal rows whatever the batch size (direct path, tiles, row blocks, tile tails)."""
    torch.manual_seed(7)
    w = _packed(kind, 50, 128, bias=True)
    x = torch.randn(130, 128)
    alone = linear(x[:1], w)
    for m in (2, 3, 4, 5, 6, 7, 64, 130):
        assert torch.equal(linear(x[:m], w)[:1], alone), m
    assert torch.equal(linear(x, w)[77:78], linear(x[77:78], w))
