"""How each linear weight is served: float32, int8 or int4 (compute_kernels/quant.py's packed forms).

`auto` keeps every weight exactly: int4 where the weight lies on a 4-bit grid (a GGUF's
Q4_1 tensors), int8 where it lies on an 8-bit grid (Q8_0), float32 elsewhere; nothing is
rounded. `int8` and `int4` force that grid on every linear (lossy where a weight was not on
it); `none` serves float32.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import torch

from compute_kernels.quant import GROUP, PackedLinear, find_exact_grid, pack, quantize

MODES = ("auto", "none", "int8", "int4")


@dataclass(slots=True)
class PackingReport:
    """What the packing chose, for the startup log."""

    kinds: Counter = field(default_factory=Counter)
    nbytes: int = 0
    float_nbytes: int = 0
    lossy: int = 0

    def add(self, packed: PackedLinear, lossy: bool) -> None:
        self.kinds[packed.kind] += 1
        self.nbytes += packed.nbytes
        self.float_nbytes += packed.n * packed.k * 4
        self.lossy += lossy

    def summary(self) -> str:
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(self.kinds.items()))
        note = f"; {self.lossy} rounded onto a grid" if self.lossy else "; exact"
        return f"{kinds} linears, {self.nbytes / 2**20:.0f} MiB (float32: {self.float_nbytes / 2**20:.0f} MiB){note}"


def pack_linear(weight: torch.Tensor, bias: torch.Tensor | None, mode: str, report: PackingReport) -> PackedLinear:
    """Packs one [N, K] weight for the CPU kernels as `mode` says."""
    weight = weight.detach().float().contiguous()
    if mode == "none" or weight.shape[1] % GROUP:
        packed, lossy = pack("float32", weight, bias), False
    elif mode == "auto":
        packed, lossy = _exact(weight, bias), False
    else:
        bits = 4 if mode == "int4" else 8
        grid = find_exact_grid(weight, bits)
        lossy = grid is None
        packed = pack(mode, weight, bias, grid=grid if grid is not None else quantize(weight, bits))
    report.add(packed, lossy)
    return packed


def _exact(weight: torch.Tensor, bias: torch.Tensor | None) -> PackedLinear:
    for kind, bits in (("int4", 4), ("int8", 8)):
        grid = find_exact_grid(weight, bits)
        if grid is not None:
            return pack(kind, weight, bias, grid=grid)
    return pack("float32", weight, bias)
