"""SiLU-and-mul in Triton: SiLU(gate) * up for a fused [num_tokens, 2 * intermediate] projection.

In float16/bfloat16 SiLU's result is rounded to the input dtype before the product, as the
torch reference (`compute_kernels.layers.silu_and_mul`) computes it.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _silu_and_mul_kernel(x_ptr, out_ptr, stride_x, stride_o, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    ok = cols < n_cols
    gate = tl.load(x_ptr + row * stride_x + cols, mask=ok, other=0.0)
    up = tl.load(x_ptr + row * stride_x + n_cols + cols, mask=ok, other=0.0)
    g = gate.to(tl.float32)
    silu = (g / (1.0 + tl.exp(-g))).to(gate.dtype).to(tl.float32)
    tl.store(out_ptr + row * stride_o + cols, (silu * up.to(tl.float32)).to(out_ptr.dtype.element_ty), mask=ok)


def silu_and_mul(gate_up: torch.Tensor) -> torch.Tensor:
    """[num_tokens, 2 * intermediate] -> [num_tokens, intermediate] in the input's dtype."""
    x = gate_up.reshape(-1, gate_up.shape[-1])
    if x.stride(-1) != 1:
        x = x.contiguous()
    n_cols = x.shape[1] // 2
    out = torch.empty(x.shape[0], n_cols, dtype=x.dtype, device=x.device)
    if x.shape[0]:
        _silu_and_mul_kernel[(x.shape[0], triton.cdiv(n_cols, BLOCK))](x, out, x.stride(0), out.stride(0), n_cols, BLOCK=BLOCK)
    return out.view(*gate_up.shape[:-1], n_cols)
