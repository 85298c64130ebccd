"""One admission per request: the engine's one rule set (engine/validation.py), run once in the core,
answered accepted or refused (naming the field) before any token."""

from __future__ import annotations

import asyncio

import pytest

from engine import AsyncLLM, EngineConfig, JsonSchemaSpec, RequestRefused, SamplingParams
from engine.validation import Limits, admit
from schemas.engine import EngineRequest

LIMITS = Limits(vocab_size=100, max_model_len=64)
PROMPT = [5, 6, 7]


@pytest.mark.parametrize(
    ("prompt", "params", "field"),
    [
        ([], SamplingParams(), "prompt"),
        ([100], SamplingParams(), "prompt"),
        (list(range(64)), SamplingParams(max_tokens=None), "prompt"),
        (PROMPT, SamplingParams(max_tokens=0), "max_tokens"),
        (PROMPT, SamplingParams(max_tokens=62), "max_tokens"),
        (PROMPT, SamplingParams(temperature=-0.1), "temperature"),
        (PROMPT, SamplingParams(temperature=100.5), "temperature"),
        (PROMPT, SamplingParams(temperature=float("nan")), "temperature"),
        (PROMPT, SamplingParams(top_p=0.0), "top_p"),
        (PROMPT, SamplingParams(top_k=-2), "top_k"),
        (PROMPT, SamplingParams(min_p=1.5), "min_p"),
        (PROMPT, SamplingParams(presence_penalty=2.5), "presence_penalty"),
        (PROMPT, SamplingParams(frequency_penalty=-3.0), "frequency_penalty"),
        (PROMPT, SamplingParams(repetition_penalty=0.0), "repetition_penalty"),
        (PROMPT, SamplingParams(seed=2**63), "seed"),
        (PROMPT, SamplingParams(logprobs=21), "logprobs"),
        (PROMPT, SamplingParams(prompt_logprobs=-1), "prompt_logprobs"),
        (PROMPT, SamplingParams(logit_bias={100: 1.0}), "logit_bias"),
        (PROMPT, SamplingParams(logit_bias={5: 101.0}), "logit_bias"),
        (PROMPT, SamplingParams(min_tokens=-1), "min_tokens"),
        (PROMPT, SamplingParams(max_tokens=4, min_tokens=5), "min_tokens"),
        (PROMPT, SamplingParams(stop_token_ids=[100]), "stop_token_ids"),
        (PROMPT, SamplingParams(stop=[""]), "stop"),
        (PROMPT, SamplingParams(stop=["x"] * 17), "stop"),
        (PROMPT, SamplingParams(ignore_eos=True, structured=JsonSchemaSpec(json_schema="{}")), "ignore_eos"),
    ],
)
def test_each_rule_names_its_field(prompt, params, field):
    with pytest.raises(ValueError, match=f"^{field}: "):
        admit(prompt, params, LIMITS)


def test_valid_params_pass_and_top_k_beyond_the_vocabulary_means_off():
    assert admit(PROMPT, SamplingParams(max_tokens=61), LIMITS).max_tokens == 61
    assert admit(PROMPT, SamplingParams(top_k=2**63 - 1), LIMITS).top_k == 0
    assert admit(PROMPT, SamplingParams(top_k=-1), LIMITS).top_k == 0
    assert admit(PROMPT, SamplingParams(top_k=7), LIMITS).top_k == 7
    assert admit(PROMPT, SamplingParams(max_tokens=None), LIMITS).max_tokens is None


def test_the_core_answers_each_request_once(llm):
    core = llm.core
    core.add_request(EngineRequest(request_id="good", prompt_token_ids=PROMPT, params=SamplingParams(max_tokens=2)))
    core.add_request(EngineRequest(request_id="bad", prompt_token_ids=PROMPT, params=SamplingParams(top_p=2.0)))
    core.add_request(EngineRequest(request_id="good", prompt_token_ids=PROMPT, params=SamplingParams(max_tokens=2)))
    accepted, refused = core.take_admissions()
    assert accepted == ["good"]
    assert [(o.request_id, o.error.split(":")[0]) for o in refused] == [("bad", "top_p"), ("good", "request_id")]
    assert core.take_admissions() == ([], [])
    while core.has_work():
        core.step()


async def test_submit_refuses_before_any_token_and_an_unread_stream_is_aborted(tiny_llama_dir):
    llm = await AsyncLLM.start(EngineConfig(model=tiny_llama_dir, max_model_len=256, num_kv_blocks=64), in_process=True)
    try:
        with pytest.raises(RequestRefused) as refused:
            await llm.submit("r1", PROMPT, SamplingParams(max_tokens=300))
        assert refused.value.field == "max_tokens" and "256" in refused.value.reason
        with pytest.raises(RequestRefused, match="^structured: "):
            await llm.submit("r2", PROMPT, SamplingParams(structured=JsonSchemaSpec(json_schema='{"type": "strin"}')))
        assert llm.num_inflight == 0
        stream = await llm.submit("r3", PROMPT, SamplingParams(max_tokens=200, ignore_eos=True))
        await stream.aclose()  # accepted, never read: closing aborts it in the core
        for _ in range(200):
            if llm.stats.num_free_blocks == 64 and llm.stats.num_running == 0:
                break
            await asyncio.sleep(0.05)
        assert llm.stats.num_free_blocks == 64 and llm.num_inflight == 0
    finally:
        await llm.shutdown()
