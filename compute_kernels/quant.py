"""Packed linear weights (float32, int8, int4 in panels of 16 columns) and their torch reference.

A weight [N, K] is packed once at load into the layout the CPU kernels read
(`compute_kernels/cpu/csrc/common.h` says the same): columns in panels of PANEL, the input dimension
in groups of GROUP sharing an fp16 scale (int8: w = scale * q; int4: w = scale * q + min).

`find_exact_grid` recovers the 4- or 8-bit grid a weight was dequantized from (a GGUF's
Q4_1 / Q8_0 tensors): the scales and minimums are fp16 values, so when they reproduce every
weight bit for bit, serving the integers loses nothing. `quantize` forces a grid (lossy).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

PANEL = 16
GROUP = 32
KINDS = ("float32", "int8", "int4")


@dataclass(slots=True)
class PackedLinear:
    """One linear layer's weight in the kernels' layout; `n`, `k` are the logical [N, K]."""

    kind: str  # "float32" | "int8" | "int4"
    n: int
    k: int
    data: torch.Tensor  # float32 [P, K, PANEL] | int8 [P, K/G, G, PANEL] | uint8 [P, K/G, G/2, PANEL]
    scales: torch.Tensor | None = None  # [P, K/G, PANEL] float16
    mins: torch.Tensor | None = None  # [P, K/G, PANEL] float16 (int4 only)
    bias: torch.Tensor | None = None  # [N] float32
    vnni: torch.Tensor | None = None  # uint8, the int weights repacked for the CPU's VNNI linear
    digits: int = 0  # with vnni: activations in fixed point of 3 (24-bit), 2 (16-bit) or 1 (8-bit) signed digits

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (self.data, self.scales, self.mins) if t is not None)


def _to_panels(t: torch.Tensor) -> torch.Tensor:
    """[N, ...] -> [P, PANEL, ...] with N zero-padded to a whole panel."""
    n = t.shape[0]
    pad = -n % PANEL
    if pad:
        t = torch.cat([t, t.new_zeros((pad, *t.shape[1:]))])
    return t.reshape(-1, PANEL, *t.shape[1:])


def pack(kind: str, weight: torch.Tensor, bias: torch.Tensor | None = None, grid=None) -> PackedLinear:
    """Packs weight [N, K] as `kind`; `grid` (q, scales, mins) is the integer form when quantized."""
    n, k = weight.shape
    bias = None if bias is None else bias.detach().float().contiguous()
    if kind == "float32":
        data = _to_panels(weight.detach().float()).permute(0, 2, 1).contiguous()  # [P, K, PANEL]
        return PackedLinear(kind, n, k, data, bias=bias)
    q, scales, mins = grid
    sc = _to_panels(scales.half()).permute(0, 2, 1).contiguous()  # [P, K/G, PANEL]
    mn = None if mins is None else _to_panels(mins.half()).permute(0, 2, 1).contiguous()
    qp = _to_panels(q).reshape(-1, PANEL, k // GROUP, GROUP).permute(0, 2, 3, 1)  # [P, K/G, G, PANEL]
    if kind == "int8":
        return PackedLinear(kind, n, k, qp.to(torch.int8).contiguous(), sc, None, bias)
    qp = qp.to(torch.uint8)
    packed = qp[:, :, 0::2, :] | (qp[:, :, 1::2, :] << 4)  # [P, K/G, G/2, PANEL]: k even low, odd high
    return PackedLinear(kind, n, k, packed.contiguous(), sc, mn, bias)


def dequantize(w: PackedLinear) -> torch.Tensor:
    """The float32 weight [N, K] the packed form stands for (the reference every kernel matches)."""
    if w.kind == "float32":
        return w.data.permute(0, 2, 1).reshape(-1, w.k)[: w.n]
    if w.kind == "int8":
        q = w.data.float()  # [P, K/G, G, PANEL]
    else:
        lo, hi = (w.data & 15).float(), (w.data >> 4).float()
        q = torch.stack([lo, hi], dim=3).flatten(2, 3)  # [P, K/G, G, PANEL]
    vals = q * w.scales.float().unsqueeze(2)
    if w.mins is not None:
        vals = vals + w.mins.float().unsqueeze(2)
    return vals.permute(0, 3, 1, 2).reshape(-1, w.k)[: w.n]


def linear_ref(x: torch.Tensor, w: PackedLinear) -> torch.Tensor:
    """x [M, K] @ W^T (+ bias) in float32: the torch reference of compute_kernels.cpu's packed linear."""
    out = x.float() @ dequantize(w).t()
    return out if w.bias is None else out + w.bias


def fixed_point_ref(x: torch.Tensor, digits: int) -> torch.Tensor:
    """x [M, K] as the VNNI linear sees it: per row and group of GROUP inputs, integers of
    `digits` signed 8-bit digits (|X| <= 8355711, 32639 or 127, nearest even) times the group's
    scale. linear_ref(fixed_point_ref(x, d), w) is the reference of the kernel with `digits=d`."""
    limit = {3: 8355711.0, 2: 32639.0, 1: 127.0}[digits]
    g = x.float().reshape(x.shape[0], -1, GROUP)
    amax = g.abs().amax(-1, keepdim=True)
    inv = torch.where(amax > 0, limit / amax, torch.zeros_like(amax))
    scale = torch.where(amax > 0, amax / limit, torch.zeros_like(amax))
    q = torch.round((g * inv).clamp(-limit, limit))
    return (q * scale).reshape(x.shape)


def _groups(weight: torch.Tensor) -> torch.Tensor:
    n, k = weight.shape
    return weight.detach().float().reshape(n, k // GROUP, GROUP)


def quantize(weight: torch.Tensor, bits: int):
    """(q, scales, mins) on a per-group grid: int4 asymmetric (GGUF Q4_1's rule), int8 symmetric
    (Q8_0's). Scales and minimums are rounded to fp16, as a GGUF stores them."""
    g = _groups(weight)
    if bits == 4:
        lo, hi = g.amin(-1), g.amax(-1)
        scale = ((hi - lo) / 15).half().float()
        mins = lo.half().float()
        inv = torch.where(scale > 0, 1 / scale, torch.zeros_like(scale))
        q = torch.round((g - mins.unsqueeze(-1)) * inv.unsqueeze(-1)).clamp(0, 15)
        return q.reshape(weight.shape).to(torch.uint8), scale, mins
    scale = (g.abs().amax(-1) / 127).half().float()
    inv = torch.where(scale > 0, 1 / scale, torch.zeros_like(scale))
    q = torch.round(g * inv.unsqueeze(-1)).clamp(-127, 127)
    return q.reshape(weight.shape).to(torch.int8), scale, None


def reconstruct(q: torch.Tensor, scales: torch.Tensor, mins: torch.Tensor | None) -> torch.Tensor:
    """The float32 weights a grid stands for, computed as a GGUF dequantizer does (d * q + m)."""
    n, k = q.shape
    vals = q.float().reshape(n, k // GROUP, GROUP) * scales.unsqueeze(-1)
    if mins is not None:
        vals = vals + mins.unsqueeze(-1)
    return vals.reshape(n, k)


def find_exact_grid(weight: torch.Tensor, bits: int):
    """The grid that reproduces `weight` bit for bit, or None (K not a whole number of groups,
    or weights that were never on such a grid)."""
    if weight.dim() != 2 or weight.shape[1] % GROUP or weight.dtype != torch.float32:
        return None
    grid = quantize(weight, bits)
    return grid if torch.equal(reconstruct(*grid), weight) else None
