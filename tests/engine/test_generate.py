"""Offline generation on tiny random models: parity with transformers, batching, caching, stops."""

from __future__ import annotations

import pytest
import torch

from engine import LLM, SamplingParams
from tests.engine.conftest import assert_no_leak

GREEDY = SamplingParams(max_tokens=24, temperature=0.0, ignore_eos=True)


def prompts_of_lengths(lengths: list[int], vocab: int = 380) -> list[list[int]]:
    gen = torch.Generator().manual_seed(1)
    return [torch.randint(3, vocab, (n,), generator=gen).tolist() for n in lengths]


def hf_greedy(folder: str, prompt: list[int], num_tokens: int) -> list[int]:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    ids = torch.tensor([prompt])
    out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=num_tokens, do_sample=False,
                         eos_token_id=None, pad_token_id=0)  # fmt: skip
    return out[0, ids.shape[1] :].tolist()


@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3"])
def test_greedy_matches_transformers(tiny_model_factory, arch):
    folder = tiny_model_factory(arch)
    llm = LLM(folder, max_model_len=256, num_kv_blocks=64, dtype="float32")  # (the reference's dtype, whatever the CPU)
    prompts = prompts_of_lengths([5, 23, 40])
    outs = llm.generate(prompts, GREEDY)
    for prompt, out in zip(prompts, outs):
        assert out.token_ids == hf_greedy(folder, prompt, 24)
        assert out.finish_reason == "length"
    assert_no_leak(llm)


def test_same_output_alone_and_in_a_batch_of_16(llm):
    prompts = prompts_of_lengths([3 + 7 * i for i in range(16)])
    alone = [llm.generate([p], GREEDY)[0].token_ids for p in prompts[:4]]
    batched = llm.generate(prompts, GREEDY)
    assert [o.token_ids for o in batched[:4]] == alone


def test_preemption_keeps_greedy_output(tiny_llama_dir):
    prompts = prompts_of_lengths([30, 31, 33, 35, 40, 41])
    roomy = LLM(tiny_llama_dir, max_model_len=128, num_kv_blocks=128, block_size=8)
    tight = LLM(tiny_llama_dir, max_model_len=128, num_kv_blocks=20, block_size=8)
    params = SamplingParams(max_tokens=40, temperature=0.0, ignore_eos=True)
    expected = [o.token_ids for o in roomy.generate(prompts, params)]
    got = [o.token_ids for o in tight.generate(prompts, params)]
    assert tight.core.scheduler.num_preemptions > 0
    assert got == expected
    assert_no_leak(tight)


def test_chunked_prefill_keeps_greedy_output(tiny_llama_dir):
    prompts = prompts_of_lengths([100, 7, 64])
    whole = LLM(tiny_llama_dir, max_model_len=256, num_kv_blocks=64, max_num_batched_tokens=512)
    chunked = LLM(tiny_llama_dir, max_model_len=256, num_kv_blocks=64, max_num_batched_tokens=16)
    assert [o.token_ids for o in chunked.generate(prompts, GREEDY)] == [o.token_ids for o in whole.generate(prompts, GREEDY)]


@pytest.mark.parametrize("caching", [True, False])
def test_prefix_caching_on_and_off(tiny_llama_dir, caching):
    llm = LLM(tiny_llama_dir, max_model_len=256, num_kv_blocks=64, enable_prefix_caching=caching)
    prompt = prompts_of_lengths([50])[0]
    first = llm.generate([prompt], GREEDY)[0]
    second = llm.generate([prompt], GREEDY)[0]
    assert second.token_ids == first.token_ids
    assert first.num_cached_tokens == 0
    assert (second.num_cached_tokens > 0) == caching
    assert_no_leak(llm)


def test_seeded_sampling_is_reproducible_across_batches(llm):
    prompt = prompts_of_lengths([12])[0]
    seeded = SamplingParams(max_tokens=20, temperature=1.0, top_p=0.9, seed=1234, ignore_eos=True)
    alone = llm.generate([prompt], seeded)[0].token_ids
    others = prompts_of_lengths([5, 17, 30])
    unseeded = SamplingParams(max_tokens=20, temperature=1.0, ignore_eos=True)
    batch = llm.generate(others + [prompt], [unseeded] * 3 + [seeded])
    assert batch[-1].token_ids == alone
    other_seed = SamplingParams(max_tokens=20, temperature=1.0, top_p=0.9, seed=99, ignore_eos=True)
    assert llm.generate([prompt], other_seed)[0].token_ids != alone


def test_stop_token_ids_and_eos(llm):
    prompt = prompts_of_lengths([10])[0]
    free = llm.generate([prompt], GREEDY)[0]
    stop_at = free.token_ids[5]
    first = free.token_ids.index(stop_at)
    out = llm.generate([prompt], SamplingParams(max_tokens=24, temperature=0, stop_token_ids=[stop_at]))[0]
    assert out.token_ids == free.token_ids[: first + 1]
    assert out.finish_reason == "stop" and out.stop_reason == stop_at


def test_stop_strings_are_cut_from_the_text(llm):
    prompt = prompts_of_lengths([10])[0]
    free = llm.generate([prompt], GREEDY)[0]
    text = free.text
    stop = text[8:11]
    assert stop and len(text) > 12
    out = llm.generate([prompt], SamplingParams(max_tokens=24, temperature=0, stop=[stop]))[0]
    assert out.text == text[: text.index(stop)]
    assert out.finish_reason == "stop" and out.stop_reason == stop
    kept = llm.generate([prompt], SamplingParams(max_tokens=24, temperature=0, stop=[stop], include_stop_str_in_output=True))[0]
    assert kept.text == text[: text.index(stop) + len(stop)]


def test_min_tokens_suppresses_stop_tokens(llm):
    prompt = prompts_of_lengths([10])[0]
    free = llm.generate([prompt], GREEDY)[0]
    stop_at = free.token_ids[0]
    out = llm.generate([prompt], SamplingParams(max_tokens=10, temperature=0, stop_token_ids=[stop_at], min_tokens=4))[0]
    assert len(out.token_ids) >= 4 and stop_at not in out.token_ids[:3]


def test_abort_frees_blocks(llm):
    from schemas.engine import EngineRequest

    core = llm.core
    params = SamplingParams(max_tokens=100, temperature=0, ignore_eos=True)
    core.add_request(EngineRequest(request_id="x", prompt_token_ids=prompts_of_lengths([40])[0], params=params))
    core.step()
    core.step()
    assert core.kv.num_free_blocks < core.kv.num_blocks
    core.abort(["x"])
    assert core.kv.num_free_blocks == core.kv.num_blocks


def test_logprobs_and_top_alternatives(llm):
    prompt = prompts_of_lengths([10])[0]
    out = llm.generate([prompt], SamplingParams(max_tokens=5, temperature=0, logprobs=3, ignore_eos=True))[0]
    assert len(out.logprobs) == 5
    for token_id, lp in zip(out.token_ids, out.logprobs):
        assert lp.token_id == token_id and lp.logprob <= 0
        assert len(lp.top_token_ids) == 3 and lp.top_token_ids[0] == token_id  # greedy picks the top one
        assert lp.top_logprobs == sorted(lp.top_logprobs, reverse=True)


@pytest.mark.parametrize(
    "params, field",
    [
        (SamplingParams(max_tokens=0), "max_tokens"),
        (SamplingParams(top_p=0.0), "top_p"),
        (SamplingParams(top_p=1.5), "top_p"),
        (SamplingParams(temperature=-1), "temperature"),
        (SamplingParams(max_tokens=10_000), "max_tokens"),
        (SamplingParams(logit_bias={10**6: 1.0}), "logit_bias"),
    ],
)
def test_bad_params_raise_value_error_naming_the_field(llm, params, field):
    with pytest.raises(ValueError, match=field):
        llm.generate([[5, 6, 7]], params)


def test_bad_prompts_raise_before_anything_is_scheduled(llm):
    with pytest.raises(ValueError, match="prompt"):
        llm.generate([[5, 6], []], SamplingParams())
    with pytest.raises(ValueError, match="prompt"):
        llm.generate([list(range(3, 600))], SamplingParams())
    assert not llm.core.scheduler.has_work()


def test_unknown_model_path_and_corrupt_file(tmp_path):
    with pytest.raises(ValueError, match="model"):
        LLM(str(tmp_path / "nope"))
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf at all")
    with pytest.raises(ValueError, match="model"):
        LLM(str(bad), cache_dir=tmp_path / "cache")
