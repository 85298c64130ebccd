"""Elementwise and normalisation ops shared by the models (torch references): RMSNorm, rotary embedding, SiLU gate."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm computed in float32, cast back to the input dtype before the weight, as HF does."""
    if x.dtype == torch.float32:
        return F.rms_norm(x, (x.shape[-1],), weight, eps)
    normed = F.rms_norm(x.float(), (x.shape[-1],), None, eps).to(x.dtype)
    return normed * weight


def add_rms_norm(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """(RMSNorm(residual + x), residual + x): a decoder's residual add and the norm after it."""
    residual = residual + x
    return rms_norm(residual, weight, eps), residual


def rotary_cos_sin(
    head_dim: int, max_positions: int, theta: float, scaling: float = 1.0, device=None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Cos and sin tables [max_positions, head_dim] in the non-interleaved (rotate-half) layout."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    positions = torch.arange(max_positions, dtype=torch.float64) / scaling
    freqs = torch.outer(positions, inv_freq)  # [max_positions, head_dim / 2]
    emb = torch.cat([freqs, freqs], dim=-1)  # [max_positions, head_dim]
    return emb.cos().float().to(device), emb.sin().float().to(device)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotates x [num_tokens, num_heads, head_dim] by per-token cos/sin [num_tokens, head_dim]."""
    half = x.shape[-1] // 2
    cos = cos.unsqueeze(1).to(x.dtype)
    sin = sin.unsqueeze(1).to(x.dtype)
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


def apply_rotary_qk(
    q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """q and k rotated (new tensors); the Triton kernel with this signature rotates in place."""
    return apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)


def silu_and_mul(gate_up: torch.Tensor) -> torch.Tensor:
    """SiLU(gate) * up for a fused [num_tokens, 2 * intermediate] projection."""
    gate, up = gate_up.chunk(2, dim=-1)
    return F.silu(gate) * up
