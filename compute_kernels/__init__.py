"""Compute kernels: torch references (any device), C kernels for the CPU (compute_kernels/cpu), Triton
kernels for CUDA (compute_kernels/triton), and one dispatch function per op that the models call
(compute_kernels/dispatch.py)."""

from compute_kernels.attention import AttentionMetadata, build_attention_metadata
from compute_kernels.dispatch import (
    add_rms_norm,
    apply_rotary_qk,
    apply_token_bitmask,
    argmax,
    cpu_kernels_available,
    paged_attention,
    rms_norm,
    silu_and_mul,
    write_kv_cache,
)
from compute_kernels.layers import apply_rotary, rotary_cos_sin

__all__ = [
    "AttentionMetadata",
    "add_rms_norm",
    "apply_rotary",
    "apply_rotary_qk",
    "apply_token_bitmask",
    "argmax",
    "build_attention_metadata",
    "cpu_kernels_available",
    "paged_attention",
    "rms_norm",
    "rotary_cos_sin",
    "silu_and_mul",
    "write_kv_cache",
]
