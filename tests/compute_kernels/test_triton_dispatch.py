"""The dispatch functions: CPU tensors keep the torch references (or the C kernels) exactly, and
the Triton modules are imported only for CUDA tensors."""

from __future__ import annotations

import subprocess
import sys

import torch

from compute_kernels import dispatch, layers
from compute_kernels.bitmask import apply_token_bitmask


def test_cpu_ops_are_the_references_bit_for_bit():
    torch.manual_seed(0)
    x, residual, weight = torch.randn(3, 40).bfloat16(), torch.randn(3, 40).bfloat16(), torch.randn(40).bfloat16()
    assert torch.equal(dispatch.rms_norm(x, weight, 1e-6), layers.rms_norm(x, weight, 1e-6))
    for got, want in zip(dispatch.add_rms_norm(x, residual, weight, 1e-6), layers.add_rms_norm(x, residual, weight, 1e-6)):
        assert torch.equal(got, want)
    q, k = torch.randn(3, 4, 16), torch.randn(3, 2, 16)
    cos, sin = layers.rotary_cos_sin(16, 8, 10000.0)
    for got, want in zip(dispatch.apply_rotary_qk(q, k, cos[:3], sin[:3]), layers.apply_rotary_qk(q, k, cos[:3], sin[:3])):
        assert torch.equal(got, want)
    gate_up = torch.randn(3, 32)
    assert torch.equal(dispatch.silu_and_mul(gate_up), layers.silu_and_mul(gate_up))
    logits, bitmask = torch.randn(2, 50), torch.tensor([[5, 0], [-1, 3]], dtype=torch.int32)
    want = logits.clone()
    apply_token_bitmask(want, bitmask)
    dispatch.apply_token_bitmask(logits, bitmask)
    assert torch.equal(logits, want)


def test_the_cpu_path_never_imports_triton():
    code = ("import sys, torch; from engine.models.llama import LlamaForCausalLM; import compute_kernels; "
            "compute_kernels.rms_norm(torch.ones(2, 8), torch.ones(8), 1e-6); "
            "print(any(m.startswith('compute_kernels.triton') or m == 'triton' for m in sys.modules))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
