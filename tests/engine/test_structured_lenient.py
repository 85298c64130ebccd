"""--structured-outputs-lenient: from the CLI to the engine config, the wider compile, and the check of
the finished document that reports a violation (never hides it)."""

from __future__ import annotations

import json

import grammar
from engine.structured import LenientCheck, StructuredOutputs, compile_spec
from gateway.cli import _engine_config, build_parser
from schemas.engine import EngineOutput, JsonSchemaSpec
from schemas.openai import ChatChoice, ChunkChoice, ChatDelta

import msgspec
import pytest

BYTES = grammar.Vocabulary([bytes([b]) for b in range(256)], [0], 256)
UNIQUE = {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}},
          "required": ["tags"]}  # fmt: skip


def test_flag_reaches_the_engine_config():
    assert _engine_config(build_parser().parse_args(["serve"])).structured_outputs_lenient is False
    args = build_parser().parse_args(["serve", "--structured-outputs-lenient"])
    assert _engine_config(args).structured_outputs_lenient is True


def test_default_refuses_and_lenient_compiles_with_a_check():
    spec = JsonSchemaSpec(json_schema=json.dumps(UNIQUE))
    with pytest.raises(grammar.GrammarError, match="uniqueItems"):
        compile_spec(spec, BYTES)
    compiled, check = compile_spec(spec, BYTES, None, False, "declared", True)
    assert isinstance(check, LenientCheck) and "uniqueItems" in check.relaxed[0]
    exact = compile_spec(JsonSchemaSpec(json_schema=json.dumps({"type": "integer"})), BYTES, None, False, "declared", True)
    assert isinstance(exact, grammar.CompiledGrammar)  # an exact grammar needs no check


def _finish(outputs: StructuredOutputs, request_id: str, text: str) -> str | None:
    for b in text.encode():
        assert outputs.accept(request_id, b)
    assert outputs.accept(request_id, 0)  # EOS
    return outputs.violation(request_id)


class _Request:
    def __init__(self, request_id: str, spec) -> None:
        self.request_id = request_id
        self.params = type("P", (), {"structured": spec})()


def test_the_finished_document_is_checked_and_a_violation_reported():
    outputs = StructuredOutputs("unused", 256, [0], 5.0, lenient=True)
    outputs._vocab = BYTES  # no tokenizer folder in this test
    spec = JsonSchemaSpec(json_schema=json.dumps(UNIQUE))
    outputs.check(spec)  # the gateway's admission check passes too
    for rid in ("dup", "ok"):
        outputs.submit(_Request(rid, spec))
    while outputs.has_pending():
        ready, failed = outputs.poll()
        assert not failed
    violation = _finish(outputs, "dup", '{"tags":["a","a"]}')
    assert violation is not None and "$.tags" in violation and "non-unique" in violation and "uniqueItems" in violation
    assert _finish(outputs, "ok", '{"tags":["a","b"]}') is None
    outputs.remove("dup")
    assert outputs.violation("dup") is None and "dup" not in outputs.checks


def test_the_violation_travels_to_the_openai_choice_only_when_set():
    out = msgspec.msgpack.decode(msgspec.msgpack.encode(EngineOutput(request_id="r", new_token_ids=[1],
                                                                     finish_reason="stop", structured_violation="$.x: bad")),
                                 type=EngineOutput)  # fmt: skip
    assert out.structured_violation == "$.x: bad"
    assert b"structured_violation" not in msgspec.msgpack.encode(EngineOutput(request_id="r", new_token_ids=[1]))
    plain = json.loads(msgspec.json.encode(ChatChoice(index=0, message={}, logprobs=None, finish_reason="stop")))
    assert "structured_output_violation" not in plain
    flagged = ChunkChoice(index=0, delta=ChatDelta(), finish_reason="stop", structured_output_violation="$.x: bad")
    assert json.loads(msgspec.json.encode(flagged))["structured_output_violation"] == "$.x: bad"


@pytest.mark.parametrize("lenient", [False, True])
async def test_the_core_admits_a_refused_schema_only_when_lenient(tiny_llama_dir, lenient):
    from engine import AsyncLLM, EngineConfig, RequestRefused, SamplingParams

    config = EngineConfig(model=tiny_llama_dir, max_model_len=256, num_kv_blocks=64, structured_outputs_lenient=lenient)
    llm = await AsyncLLM.start(config, in_process=True)
    try:
        params = SamplingParams(max_tokens=2, structured=JsonSchemaSpec(json_schema=json.dumps(UNIQUE)))
        if not lenient:  # the default: refused at admission, naming the keyword
            with pytest.raises(RequestRefused, match="^structured: .*uniqueItems"):
                await llm.submit("r", [5, 6, 7], params)
        else:
            stream = await llm.submit("r", [5, 6, 7], params)
            await stream.aclose()
    finally:
        await llm.shutdown()
