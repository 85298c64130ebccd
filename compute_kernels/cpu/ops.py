"""The CPU kernels behind torch-tensor signatures: the same signatures as the torch references
(compute_kernels/quant.py's linear_ref, compute_kernels/attention.py), checked here before a pointer reaches C.

`load_ops()` builds and loads the C module once per process (the build is cached on disk);
it is None where the kernels cannot be built, and callers keep the reference path.
"""

from __future__ import annotations

import dataclasses
import functools

import torch

from compute_kernels.cpu import build
from compute_kernels.quant import GROUP, KINDS, PackedLinear

KV_KINDS = {torch.float32: 0, torch.bfloat16: 1, torch.float16: 2}


@functools.cache
def load_ops():
    """The compiled module (compute_kernels.cpu._cpu_ops), or None where it cannot be built."""
    return build.load()


def ptr(t: torch.Tensor | None) -> int:
    return 0 if t is None else t.data_ptr()


def _check_rows(x: torch.Tensor, name: str) -> None:
    if x.device.type != "cpu" or x.dtype != torch.float32 or x.dim() != 2 or x.stride(1) != 1:
        raise ValueError(f"{name}: expected a CPU float32 [rows, cols] tensor with unit column stride")


def linear_args(w: PackedLinear) -> tuple[int, ...]:
    """The nine integers that describe a packed linear to C (LINEAR_FIELDS order)."""
    return (KINDS.index(w.kind), w.n, w.k, ptr(w.data), ptr(w.scales), ptr(w.mins), ptr(w.bias), ptr(w.vnni),
            w.digits if w.vnni is not None else 0)  # fmt: skip


def vnni_available() -> bool:
    """Whether the kernels were built with AVX512-VNNI (the CPU has it)."""
    ops = load_ops()
    return ops is not None and bool(ops.VNNI)


def with_vnni(w: PackedLinear, digits: int) -> PackedLinear:
    """w with its int8/int4 weights repacked for the VNNI linear, activations in `digits` 8-bit
    digits (3: 24-bit fixed point per group, 2: 16-bit, 1: 8-bit); float32 weights come back unchanged."""
    if w.kind == "float32" or not vnni_available():
        return w
    if digits not in (1, 2, 3):
        raise ValueError(f"digits must be 1, 2 or 3, got {digits}")
    dst = torch.empty(w.data.numel(), dtype=torch.uint8)  # as many bytes as the packed weights
    load_ops().vnni_pack(KINDS.index(w.kind), w.n, w.k, ptr(w.data), ptr(dst))
    return dataclasses.replace(w, vnni=dst, digits=digits)


def linear(x: torch.Tensor, w: PackedLinear, out: torch.Tensor | None = None) -> torch.Tensor:
    """x [M, K] @ W^T (+ bias) -> [M, N] float32; same result as compute_kernels.quant.linear_ref."""
    x = x.float().contiguous()
    _check_rows(x, "linear input")
    if x.shape[1] != w.k:
        raise ValueError(f"linear: input has {x.shape[1]} features, the weight {w.k}")
    m = x.shape[0]
    out = torch.empty(m, w.n) if out is None else out
    load_ops().linear(*linear_args(w), ptr(x), m, x.stride(0), ptr(out), out.stride(0), 0)
    return out


def bounded_argmax(x: torch.Tensor, w: PackedLinear, cheap: torch.Tensor, col_bound: torch.Tensor,
                   group_bound: torch.Tensor, window: float) -> torch.Tensor:
    """[m] long: per row of x, the first index of the largest of linear(x, w), found from `cheap`
    (linear(x, w with 1 digit), masked tokens -inf) and exact values of the candidates only
    (csrc/linear_vnni.c says how); -1 where the row needs its full logits. col_bound [n, K/GROUP]:
    sum |w| per column and input group; group_bound [K/GROUP] its largest over the columns."""
    if w.vnni is None:
        raise ValueError("bounded_argmax needs a linear in the VNNI layout (with_vnni)")
    x = x.float().contiguous()
    _check_rows(x, "linear input")
    _check_rows(cheap, "cheap logits")
    ng = w.k // GROUP
    if cheap.dtype != torch.float32 or cheap.shape != (x.shape[0], w.n) or cheap.stride(1) != 1:
        raise ValueError("bounded_argmax: cheap logits must be float32 [m, n] with unit column stride")
    if col_bound.shape != (w.n, ng) or group_bound.shape != (ng,) or not (col_bound.is_contiguous() and group_bound.is_contiguous()):
        raise ValueError("bounded_argmax: bounds of the wrong shape")
    out = torch.empty(x.shape[0], dtype=torch.long)
    load_ops().bounded_argmax(*linear_args(w), ptr(x), x.shape[0], x.stride(0), ptr(cheap), cheap.stride(0),
                              ptr(col_bound), ptr(group_bound), float(window), ptr(out))  # fmt: skip
    return out


def argmax(logits: torch.Tensor) -> torch.Tensor:
    """logits [rows, n] float32 -> [rows] int64, the same as torch.argmax(logits, dim=-1)."""
    _check_rows(logits, "argmax input")
    out = torch.empty(logits.shape[0], dtype=torch.long)
    load_ops().argmax(ptr(logits), logits.shape[0], logits.shape[1], logits.stride(0), ptr(out))
    return out


def apply_token_bitmask(logits: torch.Tensor, bitmask: torch.Tensor) -> None:
    """The same as compute_kernels.bitmask.apply_token_bitmask: logits [rows, vocab] float32 masked in place
    by the packed int32 rows [rows, words]."""
    _check_rows(logits, "bitmask logits")
    if bitmask.dtype != torch.int32 or bitmask.device.type != "cpu" or bitmask.dim() != 2 or bitmask.shape[0] != logits.shape[0]:
        raise ValueError("apply_token_bitmask: expected a CPU int32 [rows, words] bitmask, one row per logits row")
    bitmask = bitmask.contiguous()
    load_ops().apply_bitmask(ptr(logits), logits.shape[0], logits.shape[1], logits.stride(0), ptr(bitmask),
                             bitmask.shape[1])  # fmt: skip


def meta_args(meta) -> tuple[int, ...]:
    """The eight integers of an AttentionMetadata for C (META_FMT order in module.c)."""
    return (len(meta.seq_lens), ptr(meta.query_start), ptr(meta.seq_lens_t), ptr(meta.block_tables),
            meta.block_tables.shape[1], meta.block_size, ptr(meta.slot_mapping), meta.sliding_window or 0)  # fmt: skip


def paged_attention(query, k_cache, v_cache, meta, scale: float, sliding_window: int | None = None) -> torch.Tensor:
    """Causal attention of query [num_tokens, num_heads, head_dim] over the paged cache; the
    same signature and result as compute_kernels.attention.paged_attention (float32 out)."""
    num_tokens, num_heads, head_dim = query.shape
    kind = KV_KINDS.get(k_cache.dtype)
    if kind is None or not (k_cache.is_contiguous() and v_cache.is_contiguous()):
        raise ValueError(f"paged_attention: a contiguous float32/bfloat16/float16 cache is needed, got {k_cache.dtype}")
    q = query.float().contiguous().view(num_tokens, num_heads * head_dim)
    out = torch.empty(num_tokens, num_heads, head_dim)
    args = meta_args(meta)
    if sliding_window:
        args = args[:-1] + (sliding_window,)
    load_ops().attention(ptr(q), q.stride(0), ptr(out), num_heads, k_cache.shape[1], head_dim, float(scale),
                         kind, ptr(k_cache), ptr(v_cache), *args)  # fmt: skip
    return out.to(query.dtype)
