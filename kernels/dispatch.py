"""One function per op that the models call: the CPU kernel where the step asked for it, else
the torch reference (any device). Tests call the two implementations directly."""

from __future__ import annotations

import torch

from kernels import attention as reference
from kernels.attention import AttentionMetadata
from kernels.cpu import ops as cpu_ops


def cpu_kernels_available() -> bool:
    """Whether the C kernels are built (or buildable) for this machine."""
    return cpu_ops.load_ops() is not None


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
    if meta.use_cpu_kernels and query.device.type == "cpu":
        return cpu_ops.paged_attention(query, k_cache, v_cache, meta, scale, sliding_window)
    return reference.paged_attention(query, k_cache, v_cache, meta, scale, sliding_window)
