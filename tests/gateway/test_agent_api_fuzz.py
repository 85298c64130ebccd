"""Seeded fuzz of /v1/responses and /v1/messages: mutated valid bodies (fields dropped, retyped, junk
nested in) are answered 200 or a 4xx in the API's own error shape, never a 5xx, and leak no KV block."""

from __future__ import annotations

import json
import random

import pytest

from gateway.parser_config import ParserConfig
from gateway.state import GatewaySettings

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
RESPONSES = {
    "model": "fake-model", "instructions": "Be brief.", "max_output_tokens": 8, "temperature": 0.5, "top_p": 0.9,
    "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
              {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"},
              {"type": "function_call_output", "call_id": "c1", "output": "22 C"},
              {"type": "reasoning", "summary": [{"type": "summary_text", "text": "hm"}]}],
    "tools": [{"type": "function", "name": "get_weather", "parameters": SCHEMA, "strict": True}],
    "tool_choice": "auto", "parallel_tool_calls": False, "text": {"format": {"type": "text"}}, "store": False,
    "metadata": {"k": "v"}, "reasoning": {"effort": "low"},
}  # fmt: skip
MESSAGES = {
    "model": "fake-model", "max_tokens": 8, "system": [{"type": "text", "text": "Be brief."}],
    "messages": [{"role": "user", "content": "Weather?"},
                 {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": ""},
                                                   {"type": "tool_use", "id": "t1", "name": "get_weather",
                                                    "input": {"city": "Paris"}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "22 C"}]}],
    "tools": [{"name": "get_weather", "input_schema": SCHEMA}], "tool_choice": {"type": "auto"},
    "stop_sequences": ["\n\n"], "temperature": 0.5, "top_k": 5, "thinking": {"type": "disabled"},
}  # fmt: skip
JUNK = [None, True, -1, 0, 2**70, 1e308, "", "x" * 50, [], [None], {}, {"type": "nope"}, {"a": [1, {"b": None}]}]


def _mutate(value, rng: random.Random, depth: int = 0):
    """A copy of `value` with one random change somewhere inside it."""
    if isinstance(value, dict) and value and rng.random() < 0.8:
        key = rng.choice(list(value))
        out = dict(value)
        roll = rng.random()
        if roll < 0.25:
            del out[key]
        elif roll < 0.5 or depth > 3:
            out[key] = rng.choice(JUNK)
        else:
            out[key] = _mutate(value[key], rng, depth + 1)
        return out
    if isinstance(value, list) and value and rng.random() < 0.8:
        i = rng.randrange(len(value))
        out = list(value)
        out[i] = _mutate(value[i], rng, depth + 1) if rng.random() < 0.7 else rng.choice(JUNK)
        return out
    return rng.choice(JUNK)


def _judge(path: str, status: int, body: bytes) -> None:
    assert status < 500, (status, body[:300])
    if status == 200:  # a stream that failed after it opened says so in an event
        assert b"internal_error" not in body and b"api_error" not in body and b"response.failed" not in body, body[-300:]
        return
    error = json.loads(body)
    if path.startswith("/v1/messages"):
        assert error["type"] == "error" and set(error["error"]) == {"type", "message"}, error
    else:
        assert set(error["error"]) == {"message", "type", "param", "code"}, error


@pytest.mark.parametrize("path, valid", [("/v1/responses", RESPONSES), ("/v1/messages", MESSAGES),
                                         ("/v1/messages/count_tokens", MESSAGES)])  # fmt: skip
async def test_mutated_bodies_are_never_a_5xx(make_client, path, valid):
    client = await make_client(GatewaySettings(parsers=ParserConfig(tool_parser="hermes", reasoning_parser="qwen3")),
                               max_model_len=4096)  # fmt: skip
    resp = await client.post(path, json=valid)
    assert resp.status == 200, await resp.text()
    rng = random.Random(37)
    statuses = set()
    for i in range(150):
        body = _mutate(valid, rng)
        if isinstance(body, dict) and path != "/v1/messages/count_tokens" and i % 3 == 0:
            body["stream"] = True
        resp = await client.post(path, data=json.dumps(body), headers={"Content-Type": "application/json"})
        _judge(path, resp.status, await resp.read())
        statuses.add(resp.status)
    for raw in (b"", b"{", b"[]", b'{"input": "x"' * 50, b"\xff\xfe"):
        resp = await client.post(path, data=raw, headers={"Content-Type": "application/json"})
        _judge(path, resp.status, await resp.read())
        assert 400 <= resp.status < 500
    assert 200 in statuses and 400 in statuses
    fake = client.fakes[0]
    assert fake.num_free_blocks == fake.num_total_blocks and fake.num_inflight == 0
