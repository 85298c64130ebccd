"""Strict JSON schemas by default through the engine (closed objects, issue 15), open with the config flag."""

from __future__ import annotations

import json

import pytest

import grammar
from engine import AsyncLLM, EngineConfig, JsonObjectSpec, JsonSchemaSpec, RequestRefused, SamplingParams, StructuralTagSpec
from engine.structured import compile_spec

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
           "required": ["city"]}  # fmt: skip
# patternProperties beside properties (compiles in either mode since the coverage work of issue 17)
PATTERNED = {"type": "object", "properties": {"id": {"type": "integer"}}, "patternProperties": {"^x-": {"type": "string"}}}
# compiles only in strict mode: at most 5,000 members costs nothing once no extra member may come, and
# is too many to count beside extra ones
PRESENCE = {"type": "object", "properties": {"id": {"type": "integer"}}, "maxProperties": 5000}
BYTES = grammar.Vocabulary([bytes([b]) for b in range(256)], [0], 256)


def accepts(compiled, text: str) -> bool:
    m = compiled.matcher()
    return all(m.accept(b) for b in text.encode()) and m.accept(0)


@pytest.mark.parametrize("open_objects", [False, True])
def test_compile_spec_is_strict_unless_open_objects(open_objects):
    extra = '{"city":"Paris","type":["string"]}'
    schema = compile_spec(JsonSchemaSpec(json_schema=json.dumps(WEATHER)), BYTES, None, open_objects)
    assert accepts(schema, '{"city":"Paris","unit":"c"}')
    assert accepts(schema, extra) is open_objects
    tag = {"alternatives": [{"begin": "<tool_call>", "schema": WEATHER, "end": "</tool_call>"}]}
    calls = compile_spec(StructuralTagSpec(structural_tag=json.dumps(tag)), BYTES, None, open_objects)
    assert accepts(calls, f"<tool_call>{extra}</tool_call>") is open_objects
    any_object = compile_spec(JsonObjectSpec(), BYTES, None, open_objects)
    assert accepts(any_object, extra)  # json_object stays any object


def test_the_core_compiles_strict_by_default(llm):
    spec = JsonSchemaSpec(json_schema=json.dumps(WEATHER))
    outs = llm.generate([[5, 6, 7]] * 6, [SamplingParams(max_tokens=80, temperature=1.0, seed=s, structured=spec)
                                          for s in range(6)])  # fmt: skip
    for out in outs:
        if out.finish_reason == "stop":
            assert set(json.loads(out.text)) <= {"city", "unit"}, out.text
    patterned = llm.generate([[5, 6, 7]], SamplingParams(max_tokens=4, structured=JsonSchemaSpec(
        json_schema=json.dumps(PATTERNED))))[0]  # fmt: skip
    assert patterned.finish_reason in ("length", "stop")


@pytest.mark.parametrize("open_objects", [False, True])
async def test_the_core_admits_with_the_configured_mode(tiny_llama_dir, open_objects):
    config = EngineConfig(model=tiny_llama_dir, max_model_len=256, num_kv_blocks=64,
                          structured_outputs_open_objects=open_objects)  # fmt: skip
    llm = await AsyncLLM.start(config, in_process=True)
    try:
        params = SamplingParams(max_tokens=2, structured=JsonSchemaSpec(json_schema=json.dumps(PRESENCE)))
        if open_objects:  # refused at admission, naming the constraint
            with pytest.raises(RequestRefused, match="^structured: .*maxProperties"):
                await llm.submit("r", [5, 6, 7], params)
        else:
            stream = await llm.submit("r", [5, 6, 7], params)
            await stream.aclose()
    finally:
        await llm.shutdown()
