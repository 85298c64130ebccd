"""Every Triton kernel compiles for a Hopper GPU (sm_90: LLVM to PTX, then the ptxas inside the
triton wheel) without one: catches what the interpreter cannot (types, layouts, dot shapes).

Compiled in a subprocess: this test session runs the kernels interpreted where no GPU is found,
and an interpreted kernel cannot be compiled.
"""

from __future__ import annotations

import os
import subprocess
import sys

import torch

SCRIPT = r'''
import inspect, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from compute_kernels.triton import activation, bitmask, kv_cache, paged_attention, rms_norm, rotary

POINTERS = {"query_start_ptr": "*i64", "seq_lens_ptr": "*i64", "block_tables_ptr": "*i64", "slot_ptr": "*i64",
            "bitmask_ptr": "*i32", "cos_ptr": "*fp32", "sin_ptr": "*fp32", "logits_ptr": "*fp32"}

def signature(fn, constexprs):
    sig = {}
    for name in inspect.signature(fn.fn).parameters:
        if name in constexprs:
            sig[name] = "constexpr"
        elif name.endswith("_ptr"):
            sig[name] = POINTERS.get(name, "*bf16")
        else:
            sig[name] = "fp32" if name in ("scale", "eps") else "i32"
    return sig

CASES = [
    (paged_attention._attention_kernel, dict(GROUP=3, GROUP_PAD=4, BLOCK_Q=4, BLOCK_N=64, HEAD_DIM=64, HEAD_PAD=64,
                                             BLOCK_SIZE=16, PRECISION="tf32", UPCAST=False)),
    (paged_attention._attention_kernel, dict(GROUP=3, GROUP_PAD=4, BLOCK_Q=16, BLOCK_N=32, HEAD_DIM=64, HEAD_PAD=64,
                                             BLOCK_SIZE=16, PRECISION="tf32", UPCAST=False)),
    (kv_cache._write_kernel, dict(HEAD_DIM=64, NUM_HEADS=3, BLOCK=256)),
    (rms_norm._rms_norm_kernel, dict(HAS_RESIDUAL=True, ROUND=True, BLOCK=1024)),
    (rotary._rotary_kernel, dict(NUM_Q_HEADS=9, NUM_K_HEADS=3, HALF=32, Q_PAD=16, K_PAD=4, HALF_PAD=32)),
    (activation._silu_and_mul_kernel, dict(BLOCK=1024)),
    (bitmask._bitmask_kernel, dict(BLOCK=1024)),
]
for fn, constexprs in CASES:
    compiled = triton.compile(ASTSource(fn, signature(fn, constexprs), constexprs), target=GPUTarget("cuda", 90, 32))
    assert compiled.asm["cubin"], fn
print("compiled", len(CASES))
'''


def test_every_kernel_compiles_for_sm90():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "compiled 7"
