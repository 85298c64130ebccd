"""Speculative decoding on the default configuration (SmolLM2-135M through FusedLlama, C kernels,
packed weights, fp16 KV cache): greedy output is identical with speculation on and off."""

from __future__ import annotations

import pytest

from engine import LLM, SamplingParams

pytestmark = pytest.mark.model

BASE = dict(max_model_len=1024, num_kv_blocks=160)
RECORD = '{"name": "Ada Lovelace", "born": 1815, "field": "mathematics", "city": "London", "notes": "first program"}'
QUESTIONS = [
    f"Rewrite this JSON with the city changed to Paris, and nothing else changed:\n{RECORD}",
    "Write a haiku about the sea.",
]


@pytest.fixture(scope="module")
def off() -> LLM:
    return LLM(None, **BASE)


@pytest.fixture(scope="module")
def prompts(off) -> list[list[int]]:
    texts = [off.tokenizer.apply_chat_template([{"role": "user", "content": q}], add_generation_prompt=True, tokenize=False)
             for q in QUESTIONS]  # fmt: skip
    return [off.tokenizer.encode(t) for t in texts]


PARAMS = SamplingParams(max_tokens=24, temperature=0.0, logprobs=1)


@pytest.fixture(scope="module")
def want(off, prompts) -> list:
    return off.generate(prompts, PARAMS)


@pytest.mark.parametrize("kind", [dict(speculative="ngram", num_speculative_tokens=4),
                                  dict(speculative="draft", num_speculative_tokens=3),
                                  dict(speculative="tli", num_speculative_tokens=3)])  # fmt: skip
def test_greedy_output_is_identical_on_the_default_model(prompts, want, kind):
    on = LLM(None, **BASE, **kind)  # the draft proposers draft with the default model itself
    got = on.generate(prompts, PARAMS)
    for a, b in zip(want, got):
        assert b.token_ids == a.token_ids and b.text == a.text and b.finish_reason == a.finish_reason
        assert [x.logprob for x in b.logprobs] == [x.logprob for x in a.logprobs]
    assert sum(o.num_draft_tokens for o in got) > 0
    if kind["speculative"] == "ngram":
        assert got[0].num_accepted_tokens > 0  # the extraction prompt's answer copies the record
    else:
        assert all(o.num_accepted_tokens == o.num_draft_tokens for o in got)  # the draft is the target
    assert on.core.kv.num_free_blocks == on.core.kv.num_blocks
