"""One function per op that the models call: the Triton kernel for CUDA tensors, the CPU kernel
where the step asked for it, else the torch reference (any device). Tests call the
implementations directly."""

from __future__ import annotations

import functools

import torch

from compute_kernels import attention as reference
from compute_kernels import bitmask as reference_bitmask
from compute_kernels import layers
from compute_kernels.attention import AttentionMetadata
from compute_kernels.cpu import ops as cpu_ops


def cpu_kernels_available() -> bool:
    """Whether the C kernels are built (or buildable) for this machine."""
    return cpu_ops.load_ops() is not None


@functools.cache
def triton_ops():
    """The Triton kernel modules, imported on first use on a CUDA tensor (never on a CPU-only path)."""
    from compute_kernels.triton import activation, bitmask, kv_cache, paged_attention, rms_norm, rotary

    return {"activation": activation, "bitmask": bitmask, "kv_cache": kv_cache,
            "paged_attention": paged_attention, "rms_norm": rms_norm, "rotary": rotary}  # fmt: skip


def argmax(logits: torch.Tensor) -> torch.Tensor:
    """The first index of each row's largest value: [rows, n] -> [rows] int64."""
    if (logits.device.type == "cpu" and logits.dtype == torch.float32 and logits.dim() == 2 and logits.stride(1) == 1
            and cpu_kernels_available()):  # fmt: skip
        return cpu_ops.argmax(logits)
    return logits.argmax(dim=-1)


def paged_attention(
    query: torch.Tensor,  # [num_tokens, num_heads, head_dim]
    k_cache: torch.Tensor,  # [num_blocks * block_size, num_kv_heads, head_dim]
    v_cache: torch.Tensor,
    meta: AttentionMetadata,
    scale: float,
    sliding_window: int | None = None,
) -> torch.Tensor:
    """Causal attention of every new token over its request's cached context."""
    if query.is_cuda:
        return triton_ops()["paged_attention"].paged_attention(query, k_cache, v_cache, meta, scale, sliding_window)
    if meta.use_cpu_kernels and query.device.type == "cpu":
        return cpu_ops.paged_attention(query, k_cache, v_cache, meta, scale, sliding_window)
    return reference.paged_attention(query, k_cache, v_cache, meta, scale, sliding_window)


def write_kv_cache(
    key: torch.Tensor,  # [num_tokens, num_kv_heads, head_dim]
    value: torch.Tensor,
    k_cache: torch.Tensor,  # [num_blocks * block_size, num_kv_heads, head_dim]
    v_cache: torch.Tensor,
    slot_mapping: torch.Tensor,  # [num_tokens]
) -> None:
    """Each new token's keys and values into its flat cache slot."""
    if key.is_cuda:
        return triton_ops()["kv_cache"].write_kv_cache(key, value, k_cache, v_cache, slot_mapping)
    return reference.write_kv_cache(key, value, k_cache, v_cache, slot_mapping)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    if x.is_cuda:
        return triton_ops()["rms_norm"].rms_norm(x, weight, eps)
    return layers.rms_norm(x, weight, eps)


def add_rms_norm(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """(RMSNorm(residual + x), residual + x)."""
    if x.is_cuda:
        return triton_ops()["rms_norm"].add_rms_norm(x, residual, weight, eps)
    return layers.add_rms_norm(x, residual, weight, eps)


def apply_rotary_qk(
    q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """q and k rotated by per-token cos/sin; use the returned tensors (Triton rotates in place)."""
    if q.is_cuda:
        return triton_ops()["rotary"].apply_rotary_qk(q, k, cos, sin)
    return layers.apply_rotary_qk(q, k, cos, sin)


def silu_and_mul(gate_up: torch.Tensor) -> torch.Tensor:
    if gate_up.is_cuda:
        return triton_ops()["activation"].silu_and_mul(gate_up)
    return layers.silu_and_mul(gate_up)


def apply_token_bitmask(logits: torch.Tensor, bitmask: torch.Tensor) -> None:
    """Disallowed logits -> -inf in place, from the grammar's packed int32 rows."""
    if logits.is_cuda:
        return triton_ops()["bitmask"].apply_token_bitmask(logits, bitmask.to(logits.device, non_blocking=True))
    if (logits.dtype == torch.float32 and logits.dim() == 2 and logits.stride(1) == 1 and bitmask.dtype == torch.int32
            and cpu_kernels_available()):  # fmt: skip
        return cpu_ops.apply_token_bitmask(logits, bitmask)
    return reference_bitmask.apply_token_bitmask(logits, bitmask)
