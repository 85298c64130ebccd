"""RMSNorm in Triton, alone or fused with the residual add that precedes it.

One program per row, statistics in float32. In float16/bfloat16 the normalised row is
rounded to the input dtype before the weight multiplies it, as the torch references
(`compute_kernels.layers.rms_norm`, `compute_kernels.layers.add_rms_norm`) and Hugging Face do.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _rms_norm_kernel(
    x_ptr, residual_ptr, weight_ptr, out_ptr, residual_out_ptr,
    stride_x, stride_r, stride_o, stride_ro, n_cols, eps,
    HAS_RESIDUAL: tl.constexpr, ROUND: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    ok = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=ok, other=0.0).to(tl.float32)
    if HAS_RESIDUAL:
        summed = x + tl.load(residual_ptr + row * stride_r + cols, mask=ok, other=0.0).to(tl.float32)
        rounded = summed.to(residual_out_ptr.dtype.element_ty)
        tl.store(residual_out_ptr + row * stride_ro + cols, rounded, mask=ok)
        x = rounded.to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, 0) / n_cols + eps)
    normed = x * rstd
    if ROUND:
        normed = normed.to(out_ptr.dtype.element_ty).to(tl.float32)
    w = tl.load(weight_ptr + cols, mask=ok, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * stride_o + cols, (normed * w).to(out_ptr.dtype.element_ty), mask=ok)


def _rows(x: torch.Tensor) -> torch.Tensor:
    x2 = x.reshape(-1, x.shape[-1])
    return x2 if x2.stride(-1) == 1 else x2.contiguous()


def _launch(x2, residual2, weight, out, residual_out, eps: float) -> None:
    num_rows, n_cols = x2.shape
    if num_rows == 0:
        return
    has_residual = residual2 is not None
    _rms_norm_kernel[(num_rows,)](
        x2, residual2 if has_residual else x2, weight, out, residual_out if has_residual else out,
        x2.stride(0), residual2.stride(0) if has_residual else 0, out.stride(0),
        residual_out.stride(0) if has_residual else 0, n_cols, float(eps),
        HAS_RESIDUAL=has_residual, ROUND=x2.dtype != torch.float32, BLOCK=triton.next_power_of_2(n_cols),
    )  # fmt: skip


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm of x [..., hidden] over its last dimension; a new tensor of x's shape and dtype."""
    x2 = _rows(x)
    out = torch.empty(x2.shape, dtype=x.dtype, device=x.device)
    _launch(x2, None, weight, out, None, eps)
    return out.view(x.shape)


def add_rms_norm(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """(RMSNorm(x + residual), x + residual) for x, residual [num_tokens, hidden]; new tensors."""
    x2, r2 = _rows(x), _rows(residual)
    out = torch.empty(x2.shape, dtype=x.dtype, device=x.device)
    residual_out = torch.empty(x2.shape, dtype=x.dtype, device=x.device)
    _launch(x2, r2, weight, out, residual_out, eps)
    return out.view(x.shape), residual_out.view(x.shape)
