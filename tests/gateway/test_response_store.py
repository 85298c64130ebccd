"""Stored responses: previous_response_id chains (tool outputs included), GET / DELETE / input_items,
a restart between two turns, eviction oldest first, and a concurrent burst that loses nothing."""

from __future__ import annotations

import asyncio

import openai
import pytest

from gateway.parser_config import ParserConfig
from gateway.response_store import ResponseStore, StoredResponse
from gateway.state import GatewaySettings

TOOLS = [{"type": "function", "name": "get_weather", "description": "Weather of a city",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
CALL_TEXT = ["<tool_call>", '{"name": "get_weather", "arguments": {"city": "Paris"}}', "</tool_call>"]


def weather_script(tokenizer):
    """Calls get_weather until the prompt holds its result; then answers with it."""

    def script(prompt_ids, params):
        prompt = tokenizer.decode(prompt_ids)
        if "22 C" in prompt:
            return ["It is ", "22 C", " in Paris."]
        return list(CALL_TEXT)

    return script


async def _weather_client(make_client, tokenizer, **settings):
    settings = GatewaySettings(parsers=ParserConfig(tool_parser="hermes"), **settings)
    return await make_client(settings, script=weather_script(tokenizer))


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


async def _two_turns(first_client, second_client, sdk):
    first = await sdk(first_client).responses.create(model="fake-model", input="Weather in Paris?", tools=TOOLS,
                                                     tool_choice="required")  # fmt: skip
    (call,) = [item for item in first.output if item.type == "function_call"]
    assert call.name == "get_weather"
    output = {"type": "function_call_output", "call_id": call.call_id, "output": "22 C"}
    second = await sdk(second_client).responses.create(model="fake-model", previous_response_id=first.id,
                                                       input=[output], tools=TOOLS)  # fmt: skip
    return first, second


async def test_previous_response_id_chain_with_a_function_call_output(make_client, tokenizer, sdk):
    client = await _weather_client(make_client, tokenizer)
    first, second = await _two_turns(client, client, sdk)
    assert second.output_text == "It is 22 C in Paris." and second.previous_response_id == first.id
    prompt = tokenizer.decode(client.fakes[0].requests[-1][1])
    assert "Weather in Paris?" in prompt and "get_weather" in prompt and "22 C" in prompt
    api = sdk(client)
    assert (await api.responses.retrieve(first.id)).output[0].call_id == first.output[0].call_id
    items = await api.responses.input_items.list(second.id)
    assert [item.type for item in items.data] == ["function_call_output"]
    assert (await api.responses.delete(first.id)) is None
    resp = await client.get(f"/v1/responses/{first.id}")
    assert resp.status == 404 and (await resp.json())["error"]["code"] == "response_not_found"
    resp = await client.post("/v1/responses", json={"input": "again", "previous_response_id": first.id})
    assert resp.status == 404 and (await resp.json())["error"]["param"] == "previous_response_id"


async def test_store_false_and_store_none(make_client, tokenizer):
    client = await _weather_client(make_client, tokenizer)
    body = await (await client.post("/v1/responses", json={"input": "Hi", "store": False})).json()
    assert body["store"] is False and (await client.get(f"/v1/responses/{body['id']}")).status == 404
    off = await _weather_client(make_client, tokenizer, response_store="none")
    body = await (await off.post("/v1/responses", json={"input": "Hi"})).json()
    assert body["store"] is False
    resp = await off.post("/v1/responses", json={"input": "Hi", "previous_response_id": body["id"]})
    assert resp.status == 400 and (await resp.json())["error"]["param"] == "previous_response_id"


async def test_a_restart_between_two_turns(make_client, tokenizer, tmp_path, sdk):
    path = str(tmp_path / "responses.sqlite3")
    before = await _weather_client(make_client, tokenizer, response_store=path)
    first = await sdk(before).responses.create(model="fake-model", input="Weather in Paris?", tools=TOOLS)
    await before.close()  # the app's cleanup closes the store
    after = await _weather_client(make_client, tokenizer, response_store=path)
    (call,) = first.output
    output = {"type": "function_call_output", "call_id": call.call_id, "output": "22 C"}
    second = await sdk(after).responses.create(model="fake-model", previous_response_id=first.id, input=[output])
    assert second.output_text == "It is 22 C in Paris."
    assert (await sdk(after).responses.retrieve(first.id)).id == first.id


async def test_eviction_oldest_first(tmp_path):
    store = ResponseStore(str(tmp_path / "s.sqlite3"), max_bytes=1000)
    await store.open()
    try:
        for i in range(10):
            await store.save(f"resp_{i}", StoredResponse(b"r" * 100, b"[]", b"c" * 98))  # 200 bytes each
        assert await store.ids() == [f"resp_{i}" for i in range(5, 10)]
        assert await store.get("resp_4") is None and (await store.get("resp_9")).response == b"r" * 100
        await store.save("resp_big", StoredResponse(b"r" * 700, b"[]", b""))
        assert await store.ids() == ["resp_9", "resp_big"]  # 200 + 702 bytes
    finally:
        await store.close()
    reopened = ResponseStore(str(tmp_path / "s.sqlite3"), max_bytes=1000)  # sizes are re-read on open
    await reopened.open()
    try:
        await reopened.save("resp_next", StoredResponse(b"r" * 150, b"[]", b""))
        assert await reopened.ids() == ["resp_big", "resp_next"]
    finally:
        await reopened.close()


async def test_a_full_store_forgets_the_oldest_response(make_client, tokenizer):
    client = await _weather_client(make_client, tokenizer, response_store_max_mb=0.004)  # about 4 KB
    ids = [(await (await client.post("/v1/responses", json={"input": f"Hi {i}"})).json())["id"] for i in range(8)]
    assert (await client.get(f"/v1/responses/{ids[0]}")).status == 404
    assert (await client.get(f"/v1/responses/{ids[-1]}")).status == 200


async def test_64_concurrent_stored_responses_lose_none(make_client, tokenizer, tmp_path):
    client = await _weather_client(make_client, tokenizer, response_store=str(tmp_path / "burst.sqlite3"))
    replies = await asyncio.gather(*(client.post("/v1/responses", json={"input": f"Hi {i}", "stream": i % 2 == 0})
                                     for i in range(64)))  # fmt: skip
    assert all(reply.status == 200 for reply in replies)
    for reply in replies:
        await reply.read()
    stored = await asyncio.gather(*(client.get(f"/v1/responses/{rid}") for rid in await _ids(client)))
    assert len(stored) == 64 and all(resp.status == 200 for resp in stored)
    assert {(await resp.json())["status"] for resp in stored} == {"completed"}


async def _ids(client) -> list[str]:
    from gateway.routes_responses import STORE

    return await client.app[STORE].ids()


def test_store_flags_reach_the_settings(tmp_path):
    from gateway import cli
    from gateway.cli_args import build_parser
    from gateway.response_store import default_store_path

    settings, _ = cli._settings(build_parser().parse_args(["serve"]))
    assert settings.response_store == str(default_store_path()) and settings.response_store_max_mb == 256
    assert settings.response_store_max_age_s == 30 * 86400
    argv = ["serve", "--response-store", "memory", "--response-store-max-mb", "8", "--response-store-max-age-days", "0"]
    settings, _ = cli._settings(build_parser().parse_args(argv))
    assert (settings.response_store, settings.response_store_max_mb, settings.response_store_max_age_s) == ("memory", 8, None)
    with pytest.raises(ValueError, match="--response-store-max-mb"):
        cli._settings(build_parser().parse_args(["serve", "--response-store-max-mb", "0"]))


async def test_a_failing_store_still_answers(make_client, tokenizer, caplog):
    import sqlite3

    from gateway.routes_responses import STORE

    client = await _weather_client(make_client, tokenizer)

    async def broken(response_id, item):
        raise sqlite3.OperationalError("database or disk is full")

    client.app[STORE].save = broken
    for stream in (False, True):
        resp = await client.post("/v1/responses", json={"input": "Hi", "stream": stream})
        assert resp.status == 200 and b"completed" in await resp.read()
    assert "storing response" in caplog.text
