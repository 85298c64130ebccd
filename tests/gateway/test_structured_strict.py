"""Strict schemas at the edge: response_format and strict tools compile closed; the CLI flag opens them."""

from __future__ import annotations

import json

import grammar
from engine.structured import compile_spec
from gateway.parser_config import ParserConfig
from gateway.cli import _engine_config, build_parser
from gateway.state import GatewaySettings

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
           "required": ["city"]}  # fmt: skip
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]
BYTES = grammar.Vocabulary([bytes([b]) for b in range(256)], [0], 256)
MESSAGES = [{"role": "user", "content": "Weather in Paris?"}]


def _accepts(compiled, text: str) -> bool:
    m = compiled.matcher()
    return all(m.accept(b) for b in text.encode()) and m.accept(0)


def test_open_objects_flag_reaches_the_engine_config():
    assert _engine_config(build_parser().parse_args(["serve"])).structured_outputs_open_objects is False
    args = build_parser().parse_args(["serve", "--structured-outputs-open-objects"])
    assert _engine_config(args).structured_outputs_open_objects is True


async def test_named_tool_arguments_admit_only_declared_properties(make_client):
    client = await make_client(GatewaySettings(parsers=ParserConfig(tool_parser="hermes")), max_model_len=2048)
    choice = {"type": "function", "function": {"name": "get_weather"}}
    resp = await client.post("/v1/chat/completions", json={"messages": MESSAGES, "max_tokens": 3, "tools": TOOLS,
                                                            "tool_choice": choice})  # fmt: skip
    assert resp.status == 200, await resp.text()
    spec = client.fakes[0].requests[-1][2].structured
    compiled = compile_spec(spec, BYTES)  # as the engine core compiles it
    tag = json.loads(spec.structural_tag)["alternatives"][0]
    call = tag["begin"] + '{"city":"Paris","unit":"c"}' + tag["end"]
    extra = tag["begin"] + '{"city":"Paris","type":["string"]}' + tag["end"]
    assert _accepts(compiled, call)
    assert not _accepts(compiled, extra)
    assert _accepts(compile_spec(spec, BYTES, None, True), extra)  # --structured-outputs-open-objects


async def test_response_format_schema_is_checked_strict(client):
    """patternProperties beside properties compiles only closed: a 200 proves the check is strict."""
    schema = {"type": "object", "properties": {"id": {"type": "integer"}},
              "patternProperties": {"^x-": {"type": "string"}}}  # fmt: skip
    fmt = {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}
    resp = await client.post("/v1/chat/completions", json={"messages": MESSAGES, "max_tokens": 3,
                                                            "response_format": fmt})  # fmt: skip
    assert resp.status == 200, await resp.text()
    compiled = compile_spec(client.fakes[0].requests[-1][2].structured, BYTES)
    assert _accepts(compiled, '{"id":1,"x-a":"b"}') and not _accepts(compiled, '{"id":1,"b":2}')
