"""/v1/responses on the fake engine: whole and streamed output items, tools, reasoning, limits, errors,
and the official openai client's responses helpers."""

from __future__ import annotations

import asyncio
import json

import openai
import pytest

from gateway.parser_config import ParserConfig
from gateway.state import GatewaySettings
from tests.gateway.fake_engine import DEFAULT_PIECES
from tests.gateway.sse_helpers import read_named_events

TEXT = "".join(DEFAULT_PIECES)
CALL_TEXT = ["Let me check.", "<tool_call>", '{"name": "get_weather", "arg', 'uments": {"city": "Pa', 'ris"}}',
             "</tool_call>"]  # fmt: skip
THINK_TEXT = ["<think>", "The user ", "greets.", "</think>", "Hello", " there"]
TOOLS = [{"type": "function", "name": "get_weather", "description": "Weather of a city",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]


def _script(pieces):
    return lambda prompt_ids, params: list(pieces)


@pytest.fixture
async def sdk():
    """sdk(test_client) -> the official client on that server; closed after the test."""
    made = []

    def make(client) -> openai.AsyncOpenAI:
        made.append(openai.AsyncOpenAI(base_url=str(client.make_url("/v1")), api_key="x", max_retries=0))
        return made[-1]

    yield make
    for api in made:
        await api.close()


async def test_whole_response(client):
    resp = await client.post("/v1/responses", json={"input": "Hi", "instructions": "Be brief.", "metadata": {"a": "b"}})
    assert resp.status == 200
    body = await resp.json()
    assert body["object"] == "response" and body["id"].startswith("resp_") and body["status"] == "completed"
    (message,) = body["output"]
    assert message["type"] == "message" and message["role"] == "assistant" and message["status"] == "completed"
    assert message["content"] == [{"type": "output_text", "text": TEXT, "annotations": [], "logprobs": []}]
    usage = body["usage"]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    assert body["metadata"] == {"a": "b"} and body["instructions"] == "Be brief."
    prompt = client.fakes[0].tokenizer.decode(client.fakes[0].requests[-1][1])
    assert "Be brief." in prompt and "Hi" in prompt


async def test_stream_event_sequence(client):
    resp = await client.post("/v1/responses", json={"input": "Hi", "stream": True})
    events = await read_named_events(resp)
    names = [name for name, _ in events]
    assert all(name == data["type"] for name, data in events)
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    assert names[:5] == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.content_part.added", "response.output_text.delta"]
    assert names[-5:] == ["response.output_text.delta", "response.output_text.done", "response.content_part.done",
                          "response.output_item.done", "response.completed"]  # fmt: skip
    assert "".join(d["delta"] for n, d in events if n == "response.output_text.delta") == TEXT
    final = events[-1][1]["response"]
    assert final["output"][0]["content"][0]["text"] == TEXT and final["usage"]["output_tokens"] > 0


async def test_sdk_create_and_stream_agree(client, sdk):
    api = sdk(client)
    whole = await api.responses.create(model="fake-model", input="Hi")
    assert whole.output_text == TEXT
    async with api.responses.stream(model="fake-model", input="Hi") as stream:
        deltas = [event.delta async for event in stream if event.type == "response.output_text.delta"]
        final = await stream.get_final_response()
    assert "".join(deltas) == final.output_text == whole.output_text


async def test_function_call_items(make_client):
    client = await make_client(GatewaySettings(parsers=ParserConfig(tool_parser="hermes")), script=_script(CALL_TEXT))
    payload = {"input": [{"role": "user", "content": "Weather in Paris?"}], "tools": TOOLS}
    body = await (await client.post("/v1/responses", json=payload)).json()
    message, call = body["output"]
    assert message["content"][0]["text"] == "Let me check."
    assert call["type"] == "function_call" and call["name"] == "get_weather" and call["call_id"]
    assert json.loads(call["arguments"]) == {"city": "Paris"}
    events = await read_named_events(await client.post("/v1/responses", json={**payload, "stream": True}))
    args = "".join(d["delta"] for n, d in events if n == "response.function_call_arguments.delta")
    (done,) = [d for n, d in events if n == "response.function_call_arguments.done"]
    assert args == done["arguments"] == call["arguments"] and done["output_index"] == 1
    streamed = events[-1][1]["response"]["output"]
    assert [(o["type"], o.get("name")) for o in streamed] == [("message", None), ("function_call", "get_weather")]


async def test_reasoning_item_and_tokens(make_client):
    client = await make_client(GatewaySettings(parsers=ParserConfig(reasoning_parser="qwen3")),
                               script=_script(THINK_TEXT))  # fmt: skip
    body = await (await client.post("/v1/responses", json={"input": "Hi"})).json()
    reasoning, message = body["output"]
    assert reasoning["type"] == "reasoning" and reasoning["content"] == [{"type": "reasoning_text", "text": "The user greets."}]
    assert message["content"][0]["text"] == "Hello there"
    assert 0 < body["usage"]["output_tokens_details"]["reasoning_tokens"] < body["usage"]["output_tokens"]
    events = await read_named_events(await client.post("/v1/responses", json={"input": "Hi", "stream": True}))
    assert "".join(d["delta"] for n, d in events if n == "response.reasoning_text.delta") == "The user greets."
    assert [n for n, _ in events].count("response.output_item.done") == 2


async def test_max_output_tokens_is_incomplete(client):
    for stream in (False, True):
        resp = await client.post("/v1/responses", json={"input": "Hi", "max_output_tokens": 2, "stream": stream})
        if stream:
            events = await read_named_events(resp)
            assert events[-1][0] == "response.incomplete"
            body = events[-1][1]["response"]
        else:
            body = await resp.json()
        assert body["status"] == "incomplete" and body["incomplete_details"] == {"reason": "max_output_tokens"}


async def test_required_and_named_tool_choice_go_through_the_grammar(make_client):
    client = await make_client(GatewaySettings(parsers=ParserConfig(tool_parser="hermes")), script=_script(CALL_TEXT))
    for choice in ("required", {"type": "function", "name": "get_weather"}):
        resp = await client.post("/v1/responses", json={"input": "Weather?", "tools": TOOLS, "tool_choice": choice})
        assert resp.status == 200
        assert client.fakes[0].requests[-1][2].structured is not None
    strict = [{**TOOLS[0], "strict": True}]
    assert (await client.post("/v1/responses", json={"input": "Weather?", "tools": strict})).status == 200
    assert client.fakes[0].requests[-1][2].structured is not None


async def test_text_format_json_schema(make_client):
    client = await make_client(script=_script(['{"ok": ', "true}"]))
    fmt = {"type": "json_schema", "name": "r", "schema": {"type": "object", "properties": {"ok": {"type": "boolean"}},
                                                          "required": ["ok"]}}  # fmt: skip
    body = await (await client.post("/v1/responses", json={"input": "Hi", "text": {"format": fmt}})).json()
    assert json.loads(body["output"][0]["content"][0]["text"]) == {"ok": True}
    assert body["text"]["format"]["type"] == "json_schema"
    assert client.fakes[0].requests[-1][2].structured is not None
    bad = {**fmt, "schema": {"type": "object", "properties": {"n": {"type": "integer", "minimum": "zero"}}}}
    resp = await client.post("/v1/responses", json={"input": "Hi", "text": {"format": bad}})
    assert resp.status == 400 and (await resp.json())["error"]["param"] == "text.format"


async def test_sdk_parse_with_pydantic(make_client, sdk):
    from pydantic import BaseModel

    class City(BaseModel):
        name: str
        population: int

    client = await make_client(script=_script(['{"name": "Paris", ', '"population": 2100000}']))
    parsed = await sdk(client).responses.parse(model="fake-model", input="Paris?", text_format=City)
    assert parsed.output_parsed == City(name="Paris", population=2100000)


@pytest.mark.parametrize("payload, param", [
    ({}, "input"),
    ({"input": 3}, "input"),
    ({"input": []}, "input"),
    ({"input": [{"type": "message", "role": "robot", "content": "x"}]}, "input"),
    ({"input": [{"type": "function_call", "name": "f"}]}, "input"),
    ({"input": [{"type": "web_search_call"}]}, "input"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]}, "input"),
    ({"input": "x", "tools": [{"type": "web_search"}]}, "tools"),
    ({"input": "x", "tool_choice": "required"}, "tool_choice"),
    ({"input": "x", "tool_choice": {"type": "function", "name": "nope"}, "tools": TOOLS}, "tool_choice"),
    ({"input": "x", "text": {"format": {"type": "json_schema"}}}, "text.format"),
    ({"input": "x", "text": {"format": {"type": "grammar"}}}, "text.format"),
    ({"input": "x", "max_output_tokens": -1}, "max_output_tokens"),
    ({"input": "x", "temperature": "hot"}, "temperature"),
    ({"input": "x", "background": True}, "background"),
    ({"input": "x", "model": "nope"}, "model"),
    ({"input": "x", "previous_response_id": "resp_nope"}, "previous_response_id"),
])  # fmt: skip
async def test_bad_input_names_the_field(client, payload, param):
    resp = await client.post("/v1/responses", json=payload)
    assert 400 <= resp.status < 500
    error = (await resp.json())["error"]
    assert error["param"] == param, error


async def test_disconnect_frees_blocks(make_client):
    client = await make_client(step_delay_s=0.2)
    fake = client.fakes[0]
    resp = await client.post("/v1/responses", json={"input": "Hi", "stream": True})
    await resp.content.readline()
    assert fake.num_free_blocks < fake.num_total_blocks
    resp.close()
    for _ in range(100):
        if fake.num_free_blocks == fake.num_total_blocks:
            break
        await asyncio.sleep(0.02)
    assert fake.num_free_blocks == fake.num_total_blocks and fake.aborted


async def test_an_engine_that_dies_mid_stream_ends_in_each_apis_error_event(make_client):
    client = await make_client(step_delay_s=0.05)
    for path, body, last in [("/v1/responses", {"input": "Hi"}, "response.failed"),
                             ("/v1/messages", {"model": "fake-model", "max_tokens": 50,
                                               "messages": [{"role": "user", "content": "Hi"}]}, "error")]:  # fmt: skip
        resp = await client.post(path, json={**body, "stream": True})
        await resp.content.readuntil(b"\n\n")
        client.fakes[-1].kill()
        events = await read_named_events(resp)
        name, data = events[-1]
        assert name == last, events
        if path == "/v1/responses":
            assert data["response"]["status"] == "failed" and data["response"]["error"]["code"] == "engine_unavailable"
        else:
            assert data == {"type": "error", "error": {"type": "overloaded_error", "message": data["error"]["message"]}}
        for _ in range(100):  # the pool replaces the dead core
            if (await client.get("/health")).status == 200:
                break
            await asyncio.sleep(0.02)
