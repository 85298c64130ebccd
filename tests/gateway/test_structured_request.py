"""Output constraints from the request body: response_format, structured_outputs and strict tools.

The fake engine records the engine spec each request carries; schema errors are checked by
the real grammar compiler (against the tiny tokenizer) before anything streams.
"""

from __future__ import annotations

import json

import pytest

from gateway.parser_config import ParserConfig
from gateway.state import GatewaySettings
from tests.gateway.test_errors import _expect_error, _good_after

MESSAGES = [{"role": "user", "content": "Hi"}]
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "strict": True, "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
        "additionalProperties": False}}},
    {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}},
]
BAD_SCHEMA = {"type": "object", "properties": {"a": {"type": "strin"}}}


def _spec(client):
    return client.fakes[0].requests[-1][2].structured


async def _post(client, path="/v1/chat/completions", **body):
    if path.endswith("chat/completions"):
        body.setdefault("messages", MESSAGES)
    else:
        body.setdefault("prompt", "Hi")
    return await client.post(path, json={"max_tokens": 3, **body})


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/completions"])
async def test_structured_outputs_kinds_become_engine_specs(client, path):
    cases = [
        ({"json": {"type": "object", "properties": {"x": {"type": "integer"}}}}, "json_schema"),
        ({"json": '{"type": "string"}'}, "json_schema"),
        ({"regex": "[a-z]+"}, "regex"),
        ({"choice": ["yes", "no"]}, "choice"),
        ({"grammar": 'start: "a" | "b"'}, "lark"),
        ({"grammar": 'root ::= "a" | "b"'}, "gbnf"),
        ({"json_object": True}, "json_object"),
    ]
    for options, field in cases:
        resp = await _post(client, path, structured_outputs=options)
        assert resp.status == 200, await resp.text()
        assert _spec(client).__struct_config__.tag == field, options
    await _post(client, path, structured_outputs={"json": {"type": "string"}, "disable_any_whitespace": False})
    assert _spec(client).whitespace == "flexible"
    await _post(client, path, structured_outputs={"json": {"type": "string"}})
    assert _spec(client).whitespace == "compact"


async def test_older_guided_fields_map_onto_structured_outputs(client):
    resp = await _post(client, guided_json={"type": "object"}, guided_decoding_backend="xgrammar")
    assert resp.status == 200, await resp.text()
    assert json.loads(_spec(client).json_schema) == {"type": "object"}
    await _post(client, "/v1/completions", guided_choice=["a", "b"])
    assert _spec(client).choice == ["a", "b"]
    await _post(client, guided_grammar='root ::= "x"')
    assert _spec(client).gbnf == 'root ::= "x"'
    error = await _expect_error(await _post(client, guided_regex="[a", stream=True), 400, "structured_outputs")
    assert error["message"]
    await _expect_error(await _post(client, guided_json={}, guided_whitespace_pattern=" *"), 400, "structured_outputs")
    await _expect_error(await _post(client, guided_regex="a", structured_outputs={"regex": "b"}), 400,
                        "structured_outputs")


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("body", "param", "needle"),
    [
        ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": BAD_SCHEMA}}},
         "response_format", "/properties/a/type"),
        ({"structured_outputs": {"json": BAD_SCHEMA}}, "structured_outputs", "/properties/a/type"),
        ({"structured_outputs": {"json": {"type": "string", "uniqueItems": True, "not": {}}}},
         "structured_outputs", "not"),
        ({"structured_outputs": {"regex": "(unclosed"}}, "structured_outputs", ""),
        ({"structured_outputs": {"grammar": "start: undefined_rule"}}, "structured_outputs", ""),
        ({"structured_outputs": {"choice": []}}, "structured_outputs", "choice"),
        ({"structured_outputs": {"regex": "a", "choice": ["a"]}}, "structured_outputs", "exactly one"),
        ({"structured_outputs": {"json": "{not json"}}, "structured_outputs", "JSON"),
        ({"structured_outputs": {"json": {}, "whitespace_pattern": " ?"}}, "structured_outputs", "whitespace_pattern"),
        ({"structured_outputs": {"json": {}, "mystery": 1}}, "structured_outputs", "mystery"),
        ({"structured_outputs": {"json": {}}, "response_format": {"type": "json_object"}}, "structured_outputs", "both"),
    ],
)
async def test_bad_constraints_are_400_before_streaming(client, body, param, needle, stream):
    """A schema the compiler refuses is a JSON 400 even for stream=true: nothing was scheduled."""
    before = len(client.fakes[0].requests)
    resp = await _post(client, stream=stream, **body)
    error = await _expect_error(resp, 400, param)
    assert needle in error["message"]
    assert len(client.fakes[0].requests) == before
    await _good_after(client)


async def test_compile_time_limit_is_a_400(client, monkeypatch):
    import time

    import engine.structured

    real = engine.structured.compile_spec
    monkeypatch.setattr(engine.structured, "compile_spec", lambda *args: (time.sleep(0.5), real(*args)))
    client.fakes[0].grammar_compile_timeout = 0.1
    resp = await _post(client, stream=True, structured_outputs={"json": {"type": "object"}})
    error = await _expect_error(resp, 400, "structured_outputs")
    assert "exceeded" in error["message"]
    await _good_after(client)


async def test_response_format_structural_tag(client):
    fmt = {"type": "structural_tag", "triggers": ["<fn"],
           "structures": [{"begin": "<fn=a>", "schema": {"type": "object"}, "end": "</fn>"}]}
    assert (await _post(client, response_format=fmt)).status == 200
    spec = json.loads(_spec(client).structural_tag)
    assert spec["allow_free_text"] is True and spec["min_calls"] == 0
    assert spec["alternatives"] == [{"begin": "<fn=a>", "schema": {"type": "object"}, "end": "</fn>"}]
    bad = {**fmt, "triggers": ["<xyz"]}
    await _expect_error(await _post(client, response_format=bad), 400, "response_format")


def _hermes(make_client):
    return make_client(GatewaySettings(parsers=ParserConfig(tool_parser="hermes")), max_model_len=2048)


async def test_strict_tools_constrain_their_arguments_under_auto(make_client):
    client = await _hermes(make_client)
    resp = await _post(client, tools=TOOLS)
    assert resp.status == 200, await resp.text()
    spec = json.loads(_spec(client).structural_tag)
    assert spec["allow_free_text"] is True and spec["min_calls"] == 0
    (alt,) = spec["alternatives"]  # only the strict tool
    assert alt["begin"] == '<tool_call>\n{"name": "get_weather", "arguments": '
    assert alt["schema"] == TOOLS[0]["function"]["parameters"]
    assert "max_calls" not in spec
    resp = await _post(client, tools=TOOLS, parallel_tool_calls=False)
    assert resp.status == 200, await resp.text()
    assert json.loads(_spec(client).structural_tag)["max_calls"] == 1
    await _post(client, tools=TOOLS, tool_choice="none")
    assert _spec(client) is None
    await _post(client, tools=TOOLS[1:])
    assert _spec(client) is None


async def test_strict_tools_need_a_constrainable_format(make_client):
    # without a tool-call format, tool_choice auto is never a 400: the tools are prompt text, nothing is constrained
    plain = await make_client(GatewaySettings(parsers=ParserConfig(tool_parser="none")), max_model_len=2048)
    resp = await _post(plain, tools=TOOLS)
    assert resp.status == 200, await resp.text()
    assert _spec(plain) is None
    kimi = await make_client(GatewaySettings(parsers=ParserConfig(tool_parser="kimi_k2")), max_model_len=2048)
    error = await _expect_error(await _post(kimi, tools=TOOLS), 400, "tools")
    assert "kimi_k2" in error["message"] and "parallel_tool_calls" in error["message"]
    await _good_after(kimi)
    resp = await _post(kimi, tools=TOOLS, parallel_tool_calls=False)
    assert resp.status == 200, await resp.text()
    assert ":0<|tool_call_argument_begin|>" in json.loads(_spec(kimi).structural_tag)["alternatives"][0]["begin"]
    xml = await make_client(GatewaySettings(parsers=ParserConfig(tool_parser="qwen3_coder")), max_model_len=2048)
    resp = await _post(xml, tools=TOOLS)
    assert resp.status == 200, await resp.text()
    assert json.loads(_spec(xml).structural_tag)["alternatives"][0]["xml_params"]["begin"] == "<parameter={key}>\n"


async def test_strict_tool_with_a_bad_schema_is_400(make_client):
    client = await _hermes(make_client)
    tools = [{"type": "function", "function": {"name": "f", "strict": True, "parameters": BAD_SCHEMA}}]
    error = await _expect_error(await _post(client, tools=tools, stream=True), 400, "tools")
    assert "/properties/a/type" in error["message"]


async def test_tool_constraint_and_response_format_conflict(make_client):
    client = await _hermes(make_client)
    await _expect_error(await _post(client, tools=TOOLS, response_format={"type": "json_object"}), 400, "tools")
