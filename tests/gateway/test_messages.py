"""/v1/messages and /v1/messages/count_tokens on the fake engine, raw and through the official anthropic
client: content blocks, tool_use, thinking, stop reasons, the stream's events, errors and keys."""

from __future__ import annotations

import asyncio
import json

import anthropic
import pytest

from gateway.parser_config import ParserConfig
from gateway.state import GatewaySettings
from tests.gateway.fake_engine import DEFAULT_PIECES
from tests.gateway.sse_helpers import read_named_events

TEXT = "".join(DEFAULT_PIECES)
CALL_TEXT = ["Checking.", "<tool_call>", '{"name": "get_weather", "arg', 'uments": {"city": "Pa', 'ris"}}', "</tool_call>"]
THINK_TEXT = ["<think>", "The user ", "greets.", "</think>", "Hello", " there"]
TOOLS = [{"name": "get_weather", "description": "Weather of a city",
          "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
USER = [{"role": "user", "content": "Weather in Paris?"}]


def _script(pieces):
    return lambda prompt_ids, params: list(pieces)


@pytest.fixture
async def sdk():
    """sdk(test_client, api_key) -> the official client on that server; closed after the test."""
    made = []

    def make(client, api_key: str = "x") -> anthropic.AsyncAnthropic:
        made.append(anthropic.AsyncAnthropic(base_url=str(client.make_url("")), api_key=api_key, max_retries=0))
        return made[-1]

    yield make
    for api in made:
        await api.close()


async def _tool_client(make_client):
    return await make_client(GatewaySettings(parsers=ParserConfig(tool_parser="hermes")), script=_script(CALL_TEXT),
                             max_model_len=2048)


async def test_create_text(client, sdk):
    message = await sdk(client).messages.create(model="fake-model", max_tokens=64, messages=USER,
                                                system="Be brief.")  # fmt: skip
    assert message.type == "message" and message.role == "assistant" and message.id.startswith("msg_")
    assert [block.type for block in message.content] == ["text"] and message.content[0].text == TEXT
    assert message.stop_reason == "end_turn" and message.usage.output_tokens > 0 and message.usage.input_tokens > 0
    prompt = client.fakes[0].tokenizer.decode(client.fakes[0].requests[-1][1])
    assert "Be brief." in prompt and "Weather in Paris?" in prompt


async def test_stop_reasons(client, sdk):
    api = sdk(client)
    stopped = await api.messages.create(model="fake-model", max_tokens=64, messages=USER, stop_sequences=[" How"])
    assert stopped.stop_reason == "stop_sequence" and stopped.stop_sequence == " How"
    assert stopped.content[0].text == TEXT[: TEXT.index(" How")]
    cut = await api.messages.create(model="fake-model", max_tokens=2, messages=USER)
    assert cut.stop_reason == "max_tokens"


async def test_tool_use_blocks_and_history(make_client, sdk):
    client = await _tool_client(make_client)
    api = sdk(client)
    message = await api.messages.create(model="fake-model", max_tokens=64, messages=USER, tools=TOOLS,
                                        tool_choice={"type": "any", "disable_parallel_tool_use": True})  # fmt: skip
    text, tool_use = message.content
    assert text.text == "Checking." and tool_use.type == "tool_use" and tool_use.name == "get_weather"
    assert tool_use.input == {"city": "Paris"} and message.stop_reason == "tool_use"
    params = client.fakes[0].requests[-1][2]
    assert params.structured is not None  # tool_choice any: the grammar forces a call
    assert json.loads(params.structured.structural_tag)["max_calls"] == 1
    follow = [*USER, {"role": "assistant", "content": [b.model_dump() for b in message.content]},
              {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_use.id, "content": "22 C"},
                                           {"type": "text", "text": "Thanks"}]}]  # fmt: skip
    await api.messages.create(model="fake-model", max_tokens=64, messages=follow, tools=TOOLS)
    prompt = client.fakes[0].tokenizer.decode(client.fakes[0].requests[-1][1])
    assert "22 C" in prompt and "get_weather" in prompt and prompt.index("22 C") < prompt.index("Thanks")


async def test_stream_text_and_input_json_deltas(make_client, sdk):
    client = await _tool_client(make_client)
    api = sdk(client)
    kwargs = dict(model="fake-model", max_tokens=64, messages=USER, tools=TOOLS)
    whole = await api.messages.create(**kwargs)
    texts, partials = [], []
    async with api.messages.stream(**kwargs) as stream:
        async for event in stream:
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                texts.append(event.delta.text)
            elif event.type == "content_block_delta" and event.delta.type == "input_json_delta":
                partials.append(event.delta.partial_json)
        final = await stream.get_final_message()
    assert "".join(texts) == whole.content[0].text == "Checking."
    assert json.loads("".join(partials)) == whole.content[1].input == final.content[1].input
    assert final.stop_reason == whole.stop_reason == "tool_use"
    events = await read_named_events(await client.post("/v1/messages", json={**kwargs, "stream": True}))
    names = [name for name, _ in events]
    assert names[:3] == ["message_start", "ping", "content_block_start"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert [d["index"] for n, d in events if n == "content_block_start"] == [0, 1]


async def test_thinking_blocks(make_client, sdk):
    client = await make_client(GatewaySettings(parsers=ParserConfig(reasoning_parser="qwen3")), script=_script(THINK_TEXT))
    api = sdk(client)
    kwargs = dict(model="fake-model", max_tokens=64, messages=USER, thinking={"type": "enabled", "budget_tokens": 32})
    message = await api.messages.create(**kwargs)
    assert [(b.type, getattr(b, "thinking", None) or getattr(b, "text", None)) for b in message.content] == [
        ("thinking", "The user greets."), ("text", "Hello there")]
    async with api.messages.stream(**kwargs) as stream:
        thinking = [e.delta.thinking async for e in stream
                    if e.type == "content_block_delta" and e.delta.type == "thinking_delta"]  # fmt: skip
    assert "".join(thinking) == "The user greets."


async def test_count_tokens(client):
    body = {"model": "fake-model", "messages": USER, "system": "Be brief."}
    count = (await (await client.post("/v1/messages/count_tokens", json=body)).json())["input_tokens"]
    await client.post("/v1/messages", json={**body, "max_tokens": 4})
    assert count == len(client.fakes[0].requests[-1][1])


async def test_x_api_key(make_client, sdk):
    client = await make_client(GatewaySettings(api_keys=("sekrit",)))
    message = await sdk(client, "sekrit").messages.create(model="fake-model", max_tokens=8, messages=USER)
    assert message.content
    with pytest.raises(anthropic.AuthenticationError) as err:
        await sdk(client, "wrong").messages.create(model="fake-model", max_tokens=8, messages=USER)
    assert err.value.body["type"] == "error" and err.value.body["error"]["type"] == "authentication_error"


@pytest.mark.parametrize("payload, field", [
    ({"messages": USER}, "max_tokens"),
    ({"max_tokens": 8}, "messages"),
    ({"max_tokens": 0, "messages": USER}, "max_tokens"),
    ({"max_tokens": "8", "messages": USER}, "max_tokens"),
    ({"max_tokens": 8, "messages": [{"role": "robot", "content": "x"}]}, "messages"),
    ({"max_tokens": 8, "messages": [{"role": "user", "content": [{"type": "video"}]}]}, "messages"),
    ({"max_tokens": 8, "messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]}, "messages"),
    ({"max_tokens": 8, "messages": USER, "tool_choice": {"type": "any"}}, "tool_choice"),
    ({"max_tokens": 8, "messages": USER, "tool_choice": {"type": "tool", "name": "nope"}, "tools": TOOLS}, "tool_choice"),
    ({"max_tokens": 8, "messages": USER, "tools": [{"name": "bash", "type": "bash_20250124"}]}, "tools"),
    ({"max_tokens": 8, "messages": USER, "temperature": -1}, "temperature"),
    ({"max_tokens": 8, "messages": USER, "model": "claude-nope"}, "model"),
])  # fmt: skip
async def test_bad_input_is_an_anthropic_4xx_naming_the_field(client, payload, field):
    resp = await client.post("/v1/messages", json={"model": "fake-model", **payload})
    assert 400 <= resp.status < 500
    body = await resp.json()
    assert body["type"] == "error" and set(body["error"]) == {"type", "message"}
    assert body["error"]["type"] in ("invalid_request_error", "not_found_error")
    assert field in body["error"]["message"], body


async def test_disconnect_frees_blocks(make_client):
    client = await make_client(step_delay_s=0.2)
    fake = client.fakes[0]
    resp = await client.post("/v1/messages", json={"model": "fake-model", "max_tokens": 50, "messages": USER,
                                                   "stream": True})  # fmt: skip
    await resp.content.readline()
    assert fake.num_free_blocks < fake.num_total_blocks
    resp.close()
    for _ in range(100):
        if fake.num_free_blocks == fake.num_total_blocks:
            break
        await asyncio.sleep(0.02)
    assert fake.num_free_blocks == fake.num_total_blocks and fake.aborted


async def test_chat_limits_hold_in_each_apis_shape(make_client):
    client = await make_client(GatewaySettings(max_body_bytes=1024, api_keys=("k",)))
    big = "x" * 5000
    resp = await client.post("/v1/responses", json={"input": big}, headers={"Authorization": "Bearer k"})
    assert resp.status == 413 and (await resp.json())["error"]["code"] == "request_too_large"
    resp = await client.post("/v1/messages", headers={"x-api-key": "k"},
                             json={"model": "fake-model", "max_tokens": 8, "messages": [{"role": "user", "content": big}]})
    assert resp.status == 413 and (await resp.json())["error"]["type"] == "request_too_large"
    resp = await client.post("/v1/responses", json={"input": "x"})
    assert resp.status == 401 and (await resp.json())["error"]["code"] == "invalid_api_key"
    resp = await client.post("/v1/messages/count_tokens", json={"model": "fake-model", "messages": USER})
    assert resp.status == 401 and (await resp.json()) == {"type": "error", "error": {
        "type": "authentication_error", "message": "Incorrect API key provided."}}
    resp = await client.get("/v1/responses/resp_x", headers={"x-api-key": "k"})
    assert resp.status == 404  # x-api-key opens every route, as a bearer key does


async def test_a_final_assistant_message_is_a_prefill(client):
    prefill = [*USER, {"role": "assistant", "content": "The weather is"}]
    resp = await client.post("/v1/messages", json={"model": "fake-model", "max_tokens": 8, "messages": prefill})
    assert resp.status == 200
    prompt = client.fakes[0].tokenizer.decode(client.fakes[0].requests[-1][1])
    assert prompt.rstrip().endswith("The weather is")  # continued, no new assistant turn opened after it
