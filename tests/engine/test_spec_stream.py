"""Streaming under speculative decoding: the tokens one verify round keeps arrive as one delta,
and the stream adds up to the output without speculation (text, ids, stop strings)."""

from __future__ import annotations

import pytest

from engine import LLM, AsyncLLM, EngineConfig, SamplingParams
from compute_kernels.cpu.ops import load_ops

pytestmark = pytest.mark.skipif(load_ops() is None, reason="no C compiler: greedy identity needs the batch-invariant kernels")


async def test_a_verify_round_streams_as_one_delta(tiny_llama_dir):
    base = dict(max_model_len=256, num_kv_blocks=64)
    prompt = list(range(10, 40))
    offline = LLM(tiny_llama_dir, **base).generate([prompt], SamplingParams(max_tokens=24, temperature=0.0, ignore_eos=True))[0]
    stop = offline.text[len(offline.text) // 2 :][:2]
    params = SamplingParams(max_tokens=24, temperature=0.0, ignore_eos=True, stop=[stop] if stop.strip() else None)
    want = LLM(tiny_llama_dir, **base).generate([prompt], params)[0]
    config = EngineConfig(model=tiny_llama_dir, **base, speculative="draft", draft_model=tiny_llama_dir, num_speculative_tokens=3)
    llm = await AsyncLLM.start(config, in_process=True)
    try:
        deltas = [delta async for delta in llm.generate("r", prompt, params)]
    finally:
        await llm.shutdown()
    assert max(len(d.token_ids) for d in deltas) > 1  # several tokens in one delta
    assert "".join(d.text for d in deltas) == want.text
    assert [t for d in deltas for t in d.token_ids] == want.token_ids
    assert deltas[-1].finish_reason == want.finish_reason
    assert sum(d.num_draft_tokens for d in deltas) == sum(d.num_accepted_tokens for d in deltas) > 0
