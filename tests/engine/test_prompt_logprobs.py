"""Prompt logprobs: the raw logprob of every prompt token given the ones before, as transformers computes it."""

from __future__ import annotations

import pytest
import torch

from engine import LLM, SamplingParams
from tests.engine.conftest import assert_no_leak
from tests.engine.test_generate import prompts_of_lengths


def hf_prompt_logprobs(folder: str, prompt: list[int]) -> torch.Tensor:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    with torch.no_grad():
        logprobs = model(torch.tensor([prompt])).logits[0].float().log_softmax(-1)  # [len, vocab]
    return logprobs[torch.arange(len(prompt) - 1), torch.tensor(prompt[1:])]


def test_prompt_logprobs_match_transformers_across_chunks(tiny_llama_dir):
    # float32 KV: the comparison is at 1e-4, and the default fp16 KV on the C kernels rounds keys and values
    llm = LLM(tiny_llama_dir, max_model_len=256, num_kv_blocks=64, block_size=4, max_num_batched_tokens=16,
              kv_cache_dtype="float32")  # fmt: skip
    prompts = prompts_of_lengths([40, 9])
    outs = llm.generate(prompts, SamplingParams(max_tokens=2, temperature=0, ignore_eos=True, prompt_logprobs=2))
    for prompt, out in zip(prompts, outs):
        entries = out.prompt_logprobs
        assert [e.token_id for e in entries] == prompt[1:]
        expected = hf_prompt_logprobs(tiny_llama_dir, prompt)
        assert torch.allclose(torch.tensor([e.logprob for e in entries]), expected, atol=1e-4)
        for e in entries:
            assert len(e.top_token_ids) == 2 and e.top_logprobs == sorted(e.top_logprobs, reverse=True)
            assert e.top_logprobs[0] >= e.logprob - 1e-6
    assert_no_leak(llm)


def test_prompt_logprobs_bypass_the_prefix_cache_and_survive_preemption(tiny_llama_dir):
    prompts = prompts_of_lengths([30, 31, 33, 35, 40, 41])
    params = SamplingParams(max_tokens=30, temperature=0.0, ignore_eos=True, prompt_logprobs=0)
    roomy = LLM(tiny_llama_dir, max_model_len=128, num_kv_blocks=128, block_size=8)
    tight = LLM(tiny_llama_dir, max_model_len=128, num_kv_blocks=20, block_size=8)
    expected = roomy.generate(prompts, params)
    again = roomy.generate(prompts[:1], params)[0]  # same prompt: its blocks are cached, but must be recomputed
    assert again.num_cached_tokens == 0 and again.prompt_logprobs == expected[0].prompt_logprobs
    got = tight.generate(prompts, params)
    assert tight.core.scheduler.num_preemptions > 0
    for e, g in zip(expected, got):
        assert g.token_ids == e.token_ids
        assert [x.token_id for x in g.prompt_logprobs] == [x.token_id for x in e.prompt_logprobs]
        assert torch.allclose(torch.tensor([x.logprob for x in g.prompt_logprobs]),
                              torch.tensor([x.logprob for x in e.prompt_logprobs]), atol=1e-4)
        assert all(x.top_token_ids == [] for x in g.prompt_logprobs)
    plain = roomy.generate(prompts[:1], SamplingParams(max_tokens=2, temperature=0.0))[0]
    assert plain.prompt_logprobs is None and plain.num_cached_tokens > 0
    assert_no_leak(roomy)
    assert_no_leak(tight)


def test_prompt_logprobs_range_is_validated(llm):
    with pytest.raises(ValueError, match="prompt_logprobs"):
        llm.generate([[5, 6, 7]], SamplingParams(max_tokens=2, prompt_logprobs=21))
