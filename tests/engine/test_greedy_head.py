"""The two-pass greedy head (engine/runner/greedy_head.py): the same tokens as the full logits.

The tiny model with int8 weights has a VNNI lm_head where the CPU has AVX512-VNNI, so greedy rows
take the cheap pass plus exact candidates; its random weights make flat logits with many close
calls. Each case runs once with the head and once with it turned off, on the same engine.
"""

from __future__ import annotations

import json

import pytest

from compute_kernels.cpu.ops import vnni_available
from engine import LLM, JsonSchemaSpec, SamplingParams
from tests.engine.conftest import assert_no_leak

pytestmark = pytest.mark.skipif(not vnni_available(), reason="the greedy head needs the VNNI kernels")

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 9}, "tag": {"enum": ["red", "blue"]}},
          "required": ["n", "tag"], "additionalProperties": False}  # fmt: skip


@pytest.fixture(scope="module")
def int8_llm(tiny_llama_dir) -> LLM:
    llm = LLM(tiny_llama_dir, max_model_len=512, num_kv_blocks=256, block_size=16, max_num_seqs=32,
              quantization="int8")  # fmt: skip
    assert llm.core.runner.greedy_head is not None
    return llm


def _both(llm: LLM, prompts, params):
    """(tokens with the greedy head, tokens without it) and how often the head answered."""
    runner = llm.core.runner
    head = runner.greedy_head
    calls = []
    pick = head.pick
    head.pick = lambda *a: calls.append(1) or pick(*a)
    try:
        with_head = [o.token_ids for o in llm.generate(prompts, params)]
        runner.greedy_head = None
        without = [o.token_ids for o in llm.generate(prompts, params)]
    finally:
        runner.greedy_head, head.pick = head, pick
    assert_no_leak(llm)
    return with_head, without, len(calls)


def test_greedy_tokens_equal_the_full_logits(int8_llm):
    prompts = [[5, 17, 42, 9, 100, 3], list(range(30, 90)), [7], [200, 201] * 20]
    params = SamplingParams(max_tokens=40, temperature=0.0, ignore_eos=True)
    with_head, without, calls = _both(int8_llm, prompts, params)
    assert calls > 0 and with_head == without


def test_min_tokens_and_grammar_masks_apply_to_the_candidates(int8_llm):
    """Suppressed stop tokens under min_tokens and a JSON schema's mask: never a candidate."""
    prompts = [[5, 6, 7], [9, 10, 11, 12]]
    params = [SamplingParams(max_tokens=30, min_tokens=30, temperature=0.0),
              SamplingParams(max_tokens=60, temperature=0.0, structured=JsonSchemaSpec(json_schema=json.dumps(SCHEMA)))]  # fmt: skip
    with_head, without, calls = _both(int8_llm, prompts, params)
    assert calls > 0 and with_head == without
    assert len(with_head[0]) == 30
    text = int8_llm.tokenizer.decode(with_head[1])
    assert set(json.JSONDecoder().raw_decode(text.strip())[0]) == {"n", "tag"}


def test_greedy_rows_share_a_step_with_sampled_and_logprob_rows(int8_llm):
    """Sampled (seeded), logprobs and penalty rows keep the full logits in the same step."""
    prompts = [[5, 17, 42], [8, 9], [30, 31, 32, 33], [50, 51]]
    params = [SamplingParams(max_tokens=20, temperature=0.0, ignore_eos=True),
              SamplingParams(max_tokens=20, temperature=0.9, seed=4, ignore_eos=True),
              SamplingParams(max_tokens=20, temperature=0.0, logprobs=2, ignore_eos=True),
              SamplingParams(max_tokens=20, temperature=0.0, repetition_penalty=1.3, ignore_eos=True)]  # fmt: skip
    with_head, without, calls = _both(int8_llm, prompts, params)
    assert calls > 0 and with_head == without
