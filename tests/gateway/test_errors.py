"""Every client error is a 4xx with the OpenAI error body, and the next good request still succeeds."""

from __future__ import annotations

import asyncio

import pytest

from gateway.state import GatewaySettings
from tests.gateway.sse_helpers import read_events
from tests.helpers.waiting import wait_until

MESSAGES = [{"role": "user", "content": "Hi"}]
GOOD = {"messages": MESSAGES, "max_tokens": 3}


async def _expect_error(resp, status: int, param: str | None = "any") -> dict:
    assert resp.status == status, await resp.text()
    assert resp.headers["Content-Type"].startswith("application/json")
    body = await resp.json()
    error = body["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["message"]
    if param != "any":
        assert error["param"] == param
    return error


async def _good_after(client) -> None:
    resp = await client.post("/v1/chat/completions", json=GOOD)
    assert resp.status == 200, await resp.text()


BAD_BODIES = [
    ({"messages": "hi"}, "messages"),
    ({"messages": MESSAGES, "n": "two"}, "n"),
    ({"messages": MESSAGES, "temperature": "hot"}, "temperature"),
    ({"messages": MESSAGES, "max_tokens": 1.5}, "max_tokens"),
    ({"messages": MESSAGES, "stream": "yes"}, "stream"),
    ({}, "messages"),
    ({"messages": []}, "messages"),
    ({"messages": [{"role": "wizard", "content": "x"}]}, "messages"),
    ({"messages": [{"content": "x"}]}, "messages[0].role"),
    ({"messages": MESSAGES, "temperature": -1}, "temperature"),
    ({"messages": MESSAGES, "top_p": 0}, "top_p"),
    ({"messages": MESSAGES, "top_p": 1.5}, "top_p"),
    ({"messages": MESSAGES, "n": 0}, "n"),
    ({"messages": MESSAGES, "max_tokens": 0}, "max_tokens"),
    ({"messages": MESSAGES, "max_tokens": 100000}, "max_tokens"),
    ({"messages": MESSAGES, "presence_penalty": 3}, "presence_penalty"),
    ({"messages": MESSAGES, "logit_bias": {"abc": 1}}, "logit_bias"),
    ({"messages": MESSAGES, "logit_bias": {"99999999": 1}}, "logit_bias"),
    ({"messages": MESSAGES, "top_logprobs": 3}, "top_logprobs"),
    ({"messages": MESSAGES, "logprobs": True, "top_logprobs": 50}, "top_logprobs"),
    ({"messages": MESSAGES, "stop": ""}, "stop"),
    ({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, "messages"),
    ({"messages": MESSAGES, "seed": 2**70}, "seed"),
    ({"messages": MESSAGES, "tool_choice": "required"}, "tool_choice"),
    ({"messages": MESSAGES, "tool_choice": "sometimes"}, "tool_choice"),
    ({"messages": MESSAGES, "tools": [{"type": "function", "function": {"name": "f"}}],
      "tool_choice": {"type": "function", "function": {"name": "g"}}}, "tool_choice"),
    ({"messages": MESSAGES, "response_format": {"type": "xml"}}, "response_format.type"),
    ({"messages": MESSAGES, "response_format": {"type": "json_schema", "json_schema": {"name": "x"}}},
     "response_format.json_schema.schema"),
    ({"messages": MESSAGES, "tools": [{"type": "function", "function": {"name": "g"}}],
      "tool_choice": {"type": "function", "function": {}}}, "tool_choice.function.name"),
]


@pytest.mark.parametrize(("body", "param"), BAD_BODIES)
async def test_bad_chat_fields_are_400(client, body, param):
    error = await _expect_error(await client.post("/v1/chat/completions", json=body), 400, param)
    assert error["type"] == "invalid_request_error"
    await _good_after(client)


async def test_malformed_json_is_400(client):
    for raw in (b"{not json", b"", b"[1, 2]", b"null"):
        await _expect_error(
            await client.post("/v1/chat/completions", data=raw, headers={"Content-Type": "application/json"}), 400
        )
    await _good_after(client)


async def test_context_overflow_without_max_tokens(make_client):
    client = await make_client(max_model_len=32)
    long = [{"role": "user", "content": "word " * 40}]
    error = await _expect_error(await client.post("/v1/chat/completions", json={"messages": long}), 400)
    assert "context length" in error["message"]
    await _good_after(client)


async def test_unknown_model_and_route_are_404(client):
    error = await _expect_error(
        await client.post("/v1/chat/completions", json={**GOOD, "model": "gpt-9"}), 404, "model"
    )
    assert error["code"] == "model_not_found"
    await _expect_error(await client.get("/v1/models/gpt-9"), 404, "model")
    await _expect_error(await client.get("/v1/nothing-here"), 404)
    await _expect_error(await client.get("/v1/chat/completions"), 405)
    await _good_after(client)


async def test_body_too_big_is_413(make_client):
    client = await make_client(GatewaySettings(max_body_bytes=1024))
    body = {"messages": [{"role": "user", "content": "x" * 5000}]}
    error = await _expect_error(await client.post("/v1/chat/completions", json=body), 413)
    assert error["code"] == "request_too_large"
    await _good_after(client)


async def test_api_key(make_client):
    client = await make_client(GatewaySettings(api_keys=("sekret",)))
    error = await _expect_error(await client.post("/v1/chat/completions", json=GOOD), 401)
    assert error["code"] == "invalid_api_key"
    resp = await client.get("/v1/models", headers={"Authorization": "Bearer wrong"})
    await _expect_error(resp, 401)
    assert (await client.get("/health")).status == 200
    resp = await client.post("/v1/chat/completions", json=GOOD, headers={"Authorization": "Bearer sekret"})
    assert resp.status == 200


async def test_overload_is_429_with_retry_after(make_client):
    client = await make_client(max_queued=1, step_delay_s=0.05)
    first = await client.post("/v1/chat/completions", json={**GOOD, "stream": True})
    assert first.status == 200
    resp = await client.post("/v1/chat/completions", json=GOOD)
    await _expect_error(resp, 429)
    assert resp.headers["Retry-After"] == "1"
    events = await read_events(first)
    assert events[-1] == "[DONE]"
    await _good_after(client)


async def test_engine_validation_error_is_400(make_client):
    client = await make_client(max_model_len=64)
    resp = await client.post("/v1/completions", json={"prompt": [10**6], "max_tokens": 2, "echo": True})
    await _expect_error(resp, 400, "prompt")
    await _good_after(client)


async def test_disconnect_aborts_and_frees_blocks(make_client):
    client = await make_client(step_delay_s=0.2)
    fake = client.fakes[0]
    resp = await client.post("/v1/chat/completions", json={**GOOD, "max_tokens": 50, "stream": True})
    await resp.content.readline()  # the role chunk
    assert fake.num_free_blocks < fake.num_total_blocks
    resp.close()
    await wait_until(lambda: fake.num_free_blocks == fake.num_total_blocks)
    assert fake.aborted
    metrics = await (await client.get("/metrics")).text()
    assert f"gateway_kv_cache_free_blocks {float(fake.num_total_blocks)}" in metrics
    await _good_after(client)


async def test_disconnect_non_streaming_aborts(make_client):
    client = await make_client(step_delay_s=0.2)
    fake = client.fakes[0]
    task = asyncio.create_task(client.post("/v1/chat/completions", json={**GOOD, "max_tokens": 50}))
    await wait_until(lambda: fake.num_inflight)
    task.cancel()
    await wait_until(lambda: fake.num_free_blocks == fake.num_total_blocks)
    assert fake.aborted
