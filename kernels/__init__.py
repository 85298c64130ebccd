"""Compute kernels: torch reference implementations (CPU and any device); Triton ones plug in behind the same functions."""

from kernels.attention import AttentionMetadata, build_attention_metadata, paged_attention, write_kv_cache
from kernels.layers import apply_rotary, rms_norm, rotary_cos_sin, silu_and_mul

__all__ = [
    "AttentionMetadata",
    "apply_rotary",
    "build_attention_metadata",
    "paged_attention",
    "rms_norm",
    "rotary_cos_sin",
    "silu_and_mul",
    "write_kv_cache",
]
