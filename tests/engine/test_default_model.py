"""The embedded default model (SmolLM2-135M-Instruct, GGUF): conversion facts and parity with transformers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from engine import LLM, SamplingParams

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def smol() -> LLM:
    return LLM(None, max_model_len=1024, num_kv_blocks=128)


def test_conversion_keeps_the_gguf_metadata(smol):
    folder = Path(smol.info.path)
    config = json.loads((folder / "config.json").read_text())
    rope = config.get("rope_theta") or config["rope_parameters"]["rope_theta"]
    assert rope == 100000.0
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert smol.info.eos_token_ids == [2]
    assert smol.tokenizer.convert_ids_to_tokens(2) == "<|im_end|>"
    assert "<|im_start|>" in smol.tokenizer.chat_template
    assert smol.info.name == "SmolLM2-135M-Instruct"


def test_greedy_matches_transformers_on_chat_prompts(smol):
    from transformers import AutoModelForCausalLM

    questions = ["What is the capital of France?", "Write a haiku about the sea."]
    prompts = [
        smol.tokenizer.apply_chat_template([{"role": "user", "content": q}], add_generation_prompt=True, tokenize=True)
        for q in questions
    ]
    prompts = [list(p["input_ids"]) if isinstance(p, dict) or hasattr(p, "keys") else list(p) for p in prompts]
    outs = smol.generate(prompts, SamplingParams(max_tokens=64, temperature=0.0))
    reference = AutoModelForCausalLM.from_pretrained(smol.info.path, dtype=torch.float32)
    for prompt, out in zip(prompts, outs):
        ids = torch.tensor([prompt])
        expected = reference.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=64, do_sample=False)
        assert out.token_ids == expected[0, ids.shape[1] :].tolist()
    assert "Paris" in outs[0].text


def test_second_identical_chat_request_hits_the_prefix_cache(smol):
    prompt = smol.tokenizer.encode("<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nName a color.<|im_end|>\n<|im_start|>assistant\n")
    first = smol.generate([prompt], SamplingParams(max_tokens=4, temperature=0))[0]
    second = smol.generate([prompt], SamplingParams(max_tokens=4, temperature=0))[0]
    assert second.num_cached_tokens > 0 and second.token_ids == first.token_ids


def test_sampled_json_schema_output_validates_on_real_schemas(smol):
    """Real JSONSchemaBench schemas, the real vocabulary, temperature 1: every finished output validates."""
    import gzip

    import jsonschema

    from engine import JsonSchemaSpec

    path = Path(__file__).resolve().parent.parent / "grammar" / "data" / "jsonschemabench-subset.jsonl.gz"
    with gzip.open(path, "rt") as f:
        rows = [json.loads(line) for line in f][:8]
    prompt = smol.tokenizer.encode("<|im_start|>user\nGive me an example JSON document.<|im_end|>\n<|im_start|>assistant\n")
    params = [SamplingParams(max_tokens=200, temperature=1.0, seed=i,
                             structured=JsonSchemaSpec(json_schema=json.dumps(row["schema"])))
              for i, row in enumerate(rows)]  # fmt: skip
    outs = smol.generate([prompt] * len(rows), params)
    finished = 0
    for row, out in zip(rows, outs):
        assert out.finish_reason in ("stop", "length"), out.error
        if out.finish_reason == "stop":
            jsonschema.validate(json.loads(out.text), row["schema"])
            finished += 1
    assert finished >= len(rows) // 2
