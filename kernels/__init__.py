"""Compute kernels: torch references (any device), C kernels for the CPU (kernels/cpu), and
one dispatch function per op that the models call (kernels/dispatch.py)."""

from kernels.attention import AttentionMetadata, build_attention_metadata, write_kv_cache
from kernels.dispatch import argmax, cpu_kernels_available, paged_attention
from kernels.layers import apply_rotary, rms_norm, rotary_cos_sin, silu_and_mul

__all__ = [
    "AttentionMetadata",
    "apply_rotary",
    "argmax",
    "build_attention_metadata",
    "cpu_kernels_available",
    "paged_attention",
    "rms_norm",
    "rotary_cos_sin",
    "silu_and_mul",
    "write_kv_cache",
]
