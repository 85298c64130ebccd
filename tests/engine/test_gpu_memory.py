"""KV-cache sizing on CUDA: the budget arithmetic, and the profiling step (run here on the CPU)."""

from __future__ import annotations

import pytest
import torch

from engine.models.llama import LlamaArgs, LlamaForCausalLM
from engine.runner.gpu_memory import GRAPH_RESERVE_BYTES, profile_step, blocks_that_fit, bytes_per_block

GIB = 1 << 30


def test_blocks_fill_what_the_utilization_leaves():
    block = bytes_per_block((30, 3, 64), 16, torch.bfloat16)
    assert block == 2 * 30 * 16 * 3 * 64 * 2
    profile = blocks_that_fit(total=100 * GIB, in_use=2 * GIB, peak=GIB, utilization=0.9, block_bytes=block)
    assert profile.num_blocks == (90 * GIB - 3 * GIB - GRAPH_RESERVE_BYTES) // block


def test_no_room_is_an_error_naming_the_option():
    with pytest.raises(ValueError, match="gpu_memory_utilization"):
        blocks_that_fit(total=10 * GIB, in_use=9 * GIB, peak=GIB, utilization=0.5, block_bytes=1 << 20)


def test_the_profiling_step_runs_a_full_token_budget_longer_than_the_context():
    args = LlamaArgs(vocab_size=50, hidden_size=32, intermediate_size=64, num_layers=2, num_heads=4, num_kv_heads=2,
                     head_dim=8, rms_norm_eps=1e-6, rope_theta=10000.0, rope_scaling=1.0, max_position_embeddings=40,
                     tie_word_embeddings=True, qkv_bias=False, qk_norm=False)  # fmt: skip
    with torch.inference_mode():
        profile_step(LlamaForCausalLM(args), 100, 8, 16, 40, torch.float32, torch.device("cpu"))  # 40 + 40 + 20 tokens
