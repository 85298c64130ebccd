"""The transformers backend: Hugging Face models through our scheduler, paged KV cache and sampler.

Greedy ids equal transformers' own `generate` for every architecture, alone and batched
with preemption and chunked prefill; native and transformers backends agree on the
Llama family; architectures that need attention features we lack are refused at load. Parity
runs are in float32 (`dtype="float32"`): on a CPU with BF16 units the engine defaults to
bfloat16 (engine/hardware.py), which a float32 reference does not match token for token.
"""

from __future__ import annotations

import json

import pytest
import torch

from engine import EngineConfig, JsonSchemaSpec, LLM, SamplingParams
from tests.engine.conftest import assert_no_leak
from tests.engine.test_generate import prompts_of_lengths

ARCHS = ["llama", "qwen2", "qwen3", "mistral", "gemma3", "phi3", "starcoder2", "gpt_bigcode"]
LLAMA_FAMILY = ["llama", "qwen2", "qwen3", "mistral"]


def hf_generate(folder: str, prompts: list[list[int]], num_tokens: int) -> list[list[int]]:
    """transformers' own greedy decoding, one prompt at a time (no padding)."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    outs = []
    for prompt in prompts:
        ids = torch.tensor([prompt])
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=num_tokens, do_sample=False,
                             eos_token_id=None, pad_token_id=0)  # fmt: skip
        outs.append(out[0, ids.shape[1] :].tolist())
    return outs


def backend_of(llm: LLM) -> str:
    return "transformers" if type(llm.core.runner.model).__name__ == "TransformersModel" else "native"


@pytest.mark.parametrize("arch", ARCHS)
def test_greedy_matches_transformers_alone_and_batched_with_preemption(tiny_model_factory, arch):
    folder = tiny_model_factory(arch)
    prompts = prompts_of_lengths([20, 21, 23, 25])  # 44-49 tokens each: past the 16-token sliding windows
    expected = hf_generate(folder, prompts, 24)
    llm = LLM(folder, model_impl="transformers", max_model_len=96, num_kv_blocks=12, block_size=8,
              max_num_batched_tokens=16, dtype="float32")  # fmt: skip
    assert backend_of(llm) == "transformers"
    params = SamplingParams(max_tokens=24, temperature=0.0, ignore_eos=True)
    assert llm.generate([prompts[0]], params)[0].token_ids == expected[0]
    assert [o.token_ids for o in llm.generate(prompts, params)] == expected
    assert llm.core.scheduler.num_preemptions > 0
    assert_no_leak(llm)


@pytest.mark.parametrize("arch", LLAMA_FAMILY)
def test_native_and_transformers_backends_agree(tiny_model_factory, arch):
    folder = tiny_model_factory(arch)
    native = LLM(folder, model_impl="native", max_model_len=256, num_kv_blocks=64, dtype="float32")
    hf = LLM(folder, model_impl="transformers", max_model_len=256, num_kv_blocks=64, dtype="float32")
    assert (backend_of(native), backend_of(hf)) == ("native", "transformers")
    prompts = prompts_of_lengths([5, 23, 40, 64])
    greedy = SamplingParams(max_tokens=24, temperature=0.0, ignore_eos=True)
    assert [o.token_ids for o in hf.generate(prompts, greedy)] == [o.token_ids for o in native.generate(prompts, greedy)]
    assert hf.generate(prompts[-1:], greedy)[0].num_cached_tokens > 0  # prefix cache hit on the second run
    for llm in (native, hf):
        assert_no_leak(llm)


def test_sampling_options_and_grammar_agree_with_native(tiny_llama_dir):
    native = LLM(tiny_llama_dir, model_impl="native", max_model_len=256, num_kv_blocks=64, dtype="float32")
    hf = LLM(tiny_llama_dir, model_impl="transformers", max_model_len=256, num_kv_blocks=64, dtype="float32")
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 999}}, "required": ["n"], "additionalProperties": False}
    params = [
        SamplingParams(max_tokens=16, temperature=0.8, top_p=0.9, top_k=50, seed=7, ignore_eos=True),
        SamplingParams(max_tokens=16, temperature=1.0, min_p=0.05, seed=8, presence_penalty=0.5,
                       repetition_penalty=1.2, logit_bias={17: 5.0}, ignore_eos=True),  # fmt: skip
        SamplingParams(max_tokens=8, temperature=0.0, logprobs=2, ignore_eos=True),
        SamplingParams(max_tokens=40, temperature=1.0, seed=9, structured=JsonSchemaSpec(json_schema=json.dumps(schema))),
    ]
    prompts = prompts_of_lengths([12, 20, 9, 15])
    want, got = native.generate(prompts, params), hf.generate(prompts, params)
    assert [o.token_ids for o in got] == [o.token_ids for o in want]
    assert [lp.top_token_ids for lp in got[2].logprobs] == [lp.top_token_ids for lp in want[2].logprobs]
    assert "n" in json.loads(got[3].text)
    assert_no_leak(hf)


def test_auto_picks_native_for_llama_and_transformers_otherwise(tiny_model_factory):
    assert backend_of(LLM(tiny_model_factory("llama"), max_model_len=64, num_kv_blocks=8)) == "native"
    assert backend_of(LLM(tiny_model_factory("gpt_bigcode"), max_model_len=64, num_kv_blocks=8)) == "transformers"


def test_auto_sends_a_short_sliding_window_to_transformers(tiny_model_factory, tmp_path):
    import shutil

    folder = shutil.copytree(tiny_model_factory("mistral"), tmp_path / "m")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "sliding_window": 16}))
    assert backend_of(LLM(str(folder), max_model_len=64, num_kv_blocks=8)) == "transformers"


def test_model_impl_is_validated(tiny_model_factory):
    with pytest.raises(ValueError, match="model_impl"):
        EngineConfig(model_impl="vllm").validate()
    with pytest.raises(ValueError, match="not supported"):
        LLM(tiny_model_factory("gpt_bigcode"), model_impl="native", max_model_len=64, num_kv_blocks=8)


async def test_core_process_serves_a_transformers_model(tiny_model_factory):
    from engine import AsyncLLM
    from tests.engine.test_async_llm import collect

    folder = tiny_model_factory("gpt_bigcode")
    params = SamplingParams(max_tokens=12, temperature=0.0, ignore_eos=True)
    expected = LLM(folder, max_model_len=128, num_kv_blocks=32).generate([list(range(10, 30))], params)[0]
    llm = await AsyncLLM.start(EngineConfig(model=folder, max_model_len=128, num_kv_blocks=32), in_process=False)
    try:
        text, ids, last = await collect(llm, "r0", list(range(10, 30)), params)
        assert ids == expected.token_ids and text == expected.text
    finally:
        await llm.shutdown()


def _random_model(path, config) -> str:
    from transformers import AutoModelForCausalLM

    AutoModelForCausalLM.from_config(config).save_pretrained(str(path))
    return str(path)


def _refused_configs():
    import transformers

    small = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                 num_key_value_heads=1, head_dim=16, pad_token_id=None)  # fmt: skip
    return {
        "softcap": transformers.Gemma2Config(**small),  # attention logit soft-capping
        "bidirectional": transformers.Gemma3TextConfig(use_bidirectional_attention=True, **small),
        "layers without standard attention": transformers.Lfm2Config(
            vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
            num_key_value_heads=1, layer_types=["conv", "full_attention"], pad_token_id=None),  # fmt: skip
        "attention interface": transformers.BloomConfig(vocab_size=64, hidden_size=32, n_layer=2, n_head=2),  # ALiBi
        "rope": transformers.LlamaConfig(rope_parameters={"rope_type": "dynamic", "factor": 2.0, "rope_theta": 1e4},
                                         **small),  # rescaled by the longest sequence in the batch  # fmt: skip
    }


@pytest.mark.parametrize("reason", ["softcap", "bidirectional", "layers without standard attention", "attention interface", "rope"])
def test_architectures_we_cannot_run_are_refused_at_load(tmp_path, reason):
    folder = _random_model(tmp_path / "m", _refused_configs()[reason])
    with pytest.raises(ValueError, match=reason):
        LLM(folder, model_impl="transformers", max_model_len=64, num_kv_blocks=8)


def test_a_checkpoint_missing_a_weight_is_refused(tiny_model_factory, tmp_path):
    import shutil

    from safetensors.torch import load_file, save_file

    folder = shutil.copytree(tiny_model_factory("gpt_bigcode"), tmp_path / "m")
    weights = load_file(str(folder / "model.safetensors"))
    weights.pop(next(name for name in weights if name.endswith("c_attn.weight")))
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(ValueError, match="lacks"):
        LLM(str(folder), model_impl="transformers", max_model_len=64, num_kv_blocks=8)


@pytest.mark.model
def test_default_model_native_and_transformers_agree():
    # a float32 KV cache on both sides: the third prompt meets a near-tie (logits 31.4964 / 31.4936
    # in transformers float32), and a float16 cache's rounding re-rolls such ties whenever the
    # arithmetic before it changes in the last bits (the fixed-point linear is more exact than the
    # float path: 2.2e-7 vs 5.5e-7 of the largest output, yet flips this tie with a float16 cache)
    kw = dict(max_model_len=512, num_kv_blocks=64, dtype="float32", kv_cache_dtype="float32")
    native = LLM(None, model_impl="native", **kw)
    hf = LLM(None, model_impl="transformers", **kw)
    questions = ["What is the capital of France?", "Write a haiku about the sea.", "List three prime numbers."]
    prompts = [native.tokenizer.apply_chat_template([{"role": "user", "content": q}], add_generation_prompt=True,
                                                    tokenize=False) for q in questions]  # fmt: skip
    params = SamplingParams(max_tokens=32, temperature=0.0)
    assert [o.token_ids for o in hf.generate(prompts, params)] == [o.token_ids for o in native.generate(prompts, params)]
    assert_no_leak(hf)
