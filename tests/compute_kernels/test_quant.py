"""Packed weight formats: packing round trips, exact grids found bit for bit, forced grids."""

from __future__ import annotations

import pytest
import torch

from compute_kernels.quant import dequantize, find_exact_grid, pack, quantize, reconstruct


@pytest.mark.parametrize("n", [1, 16, 17, 40])
def test_float_pack_round_trips(n):
    w = torch.randn(n, 64)
    assert torch.equal(dequantize(pack("float32", w)), w)


@pytest.mark.parametrize("bits,kind", [(4, "int4"), (8, "int8")])
@pytest.mark.parametrize("n", [16, 33])
def test_grid_pack_round_trips(bits, kind, n):
    w = torch.randn(n, 96)
    grid = quantize(w, bits)
    assert torch.equal(dequantize(pack(kind, w, grid=grid)), reconstruct(*grid))


@pytest.mark.parametrize("bits", [4, 8])
def test_exact_grid_is_found_on_dequantized_weights(bits):
    on_grid = reconstruct(*quantize(torch.randn(48, 128), bits))  # what a GGUF dequantizer writes
    grid = find_exact_grid(on_grid, bits)
    assert grid is not None
    assert torch.equal(reconstruct(*grid), on_grid)


def test_no_exact_grid_for_ordinary_weights():
    w = torch.randn(48, 128)
    assert find_exact_grid(w, 4) is None
    assert find_exact_grid(w, 8) is None
    assert find_exact_grid(torch.randn(4, 40), 4) is None  # K not a whole number of groups


def test_an_int4_grid_is_not_an_int8_grid():
    on_grid = reconstruct(*quantize(torch.randn(32, 64), 4))
    assert find_exact_grid(on_grid, 8) is None or torch.equal(reconstruct(*find_exact_grid(on_grid, 8)), on_grid)


def test_constant_and_zero_groups_quantize_exactly():
    assert find_exact_grid(torch.full((16, 64), 0.25), 4) is not None  # scale 0, the minimum carries it
    assert find_exact_grid(torch.zeros(16, 64), 8) is not None


def test_forced_grid_error_is_bounded():
    w = torch.randn(64, 256)
    for bits, steps in ((4, 15), (8, 254)):
        q, scales, mins = quantize(w, bits)
        err = (reconstruct(q, scales, mins) - w).abs().reshape(64, -1, 32).amax(-1)
        spread = w.reshape(64, -1, 32)
        span = spread.amax(-1) - spread.amin(-1) if bits == 4 else 2 * spread.abs().amax(-1)
        assert bool((err <= span / steps * 0.51 + 1e-3).all())
