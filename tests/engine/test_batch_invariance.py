"""Batch invariance on the CPU kernels: a request's greedy tokens and logprobs do not depend on
what else runs with it, nor on how its prompt was split into prefill chunks. (The torch
reference path is not batch invariant: its matmuls sum in an order that depends on the batch.)"""

from __future__ import annotations

import pytest

from engine import LLM, SamplingParams
from compute_kernels.cpu.ops import load_ops

PROMPT = [5, 17, 42, 9, 100, 3, 77, 12, 8, 250, 31, 64, 2, 90, 18, 44, 6, 130, 71, 15]
OTHERS = [list(range(40, 40 + n)) for n in (3, 33, 70, 1, 12, 50, 7)]


def _run(llm: LLM, prompts) -> tuple[list[int], list[float]]:
    params = SamplingParams(max_tokens=24, temperature=0.0, ignore_eos=True, logprobs=0)
    out = llm.generate(prompts, params)[0]
    return out.token_ids, [lp.logprob for lp in out.logprobs]


pytestmark = pytest.mark.skipif(load_ops() is None, reason="no C compiler: the CPU kernels cannot be built here")


def test_tokens_and_logprobs_do_not_depend_on_the_batch(tiny_llama_dir):
    results = []
    for budget, others in ((2048, []), (2048, OTHERS), (6, OTHERS[:3]), (48, OTHERS)):
        llm = LLM(tiny_llama_dir, max_model_len=256, num_kv_blocks=256, block_size=4,
                  max_num_batched_tokens=budget, enable_prefix_caching=False)
        results.append(_run(llm, [PROMPT, *others]))
    assert all(r == results[0] for r in results[1:])


@pytest.mark.model
def test_default_model_is_batch_invariant():
    """The defaults on the real model (packed int4/int8 weights on CPU): alone, batched, chunked."""
    llm = LLM(None, max_model_len=512, num_kv_blocks=256)
    prompt = llm.tokenizer.encode("The three most important inventions of the last century are")
    others = [llm.tokenizer.encode(t) for t in ("Hello", "Write a long poem about the sea and the wind " * 4, "1 2 3")]
    alone = _run(llm, [prompt])
    assert _run(llm, [prompt, *others]) == alone
    chunked = LLM(None, max_model_len=512, num_kv_blocks=256, max_num_batched_tokens=5)
    assert _run(chunked, [prompt, *others]) == alone
