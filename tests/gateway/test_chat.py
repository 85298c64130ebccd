"""Chat completions against the fake engine: replies, SSE framing, n > 1, stops, logprobs, usage."""

from __future__ import annotations

from tests.gateway.fake_engine import DEFAULT_PIECES
from tests.gateway.sse_helpers import read_events

FULL_TEXT = "".join(DEFAULT_PIECES)
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]


async def test_non_streaming_reply(client):
    resp = await client.post("/v1/chat/completions", json={"model": "fake-model", "messages": MESSAGES})
    assert resp.status == 200, await resp.text()
    body = await resp.json()
    assert body["object"] == "chat.completion"
    assert body["id"].startswith("chatcmpl-")
    assert body["model"] == "fake-model"
    (choice,) = body["choices"]
    assert choice == {
        "index": 0,
        "message": {"role": "assistant", "content": FULL_TEXT},
        "logprobs": None,
        "finish_reason": "stop",
    }
    usage = body["usage"]
    assert usage["completion_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert usage["prompt_tokens_details"] == {"cached_tokens": 0}


async def test_prompt_is_the_chat_template(client):
    await client.post("/v1/chat/completions", json={"messages": MESSAGES})
    _, prompt_ids, _ = client.fakes[0].requests[-1]
    text = client.fakes[0].tokenizer.decode(prompt_ids)
    assert text == "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"


async def test_streaming_framing(client):
    resp = await client.post("/v1/chat/completions", json={"messages": MESSAGES, "stream": True})
    assert resp.status == 200
    assert resp.headers["Content-Type"].startswith("text/event-stream")
    events = await read_events(resp)
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    assert len({c["id"] for c in chunks}) == 1
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert all("usage" not in c for c in chunks)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert all("role" not in c["choices"][0]["delta"] for c in chunks[1:])
    finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"][0]["finish_reason"]]
    assert finishes == ["stop"]
    assert chunks[-1]["choices"][0]["delta"] == {}
    assert chunks[-1]["choices"][0]["logprobs"] is None
    content = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert content == FULL_TEXT


async def test_stream_equals_non_stream(client):
    payload = {"messages": MESSAGES, "temperature": 0, "max_tokens": 5}
    full = await (await client.post("/v1/chat/completions", json=payload)).json()
    events = await read_events(await client.post("/v1/chat/completions", json={**payload, "stream": True}))
    streamed = "".join(e["choices"][0]["delta"].get("content") or "" for e in events[:-1])
    assert streamed == full["choices"][0]["message"]["content"]
    assert events[-2]["choices"][0]["finish_reason"] == full["choices"][0]["finish_reason"] == "length"


async def test_include_usage_adds_one_final_usage_chunk(client):
    payload = {"messages": MESSAGES, "stream": True, "stream_options": {"include_usage": True}}
    events = await read_events(await client.post("/v1/chat/completions", json=payload))
    assert events[-1] == "[DONE]"
    usage_chunk = events[-2]
    assert usage_chunk["choices"] == []
    assert usage_chunk["usage"]["completion_tokens"] > 0
    assert usage_chunk["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    assert all("usage" not in e for e in events[:-2])


async def test_n_choices_stream_interleaved_with_distinct_seeds(client):
    payload = {"messages": MESSAGES, "n": 3, "seed": 7, "temperature": 1.0, "stream": True}
    events = await read_events(await client.post("/v1/chat/completions", json=payload))
    chunks = events[:-1]
    assert all(len(c["choices"]) == 1 for c in chunks)
    by_index: dict[int, list] = {0: [], 1: [], 2: []}
    for c in chunks:
        by_index[c["choices"][0]["index"]].append(c["choices"][0])
    for choices in by_index.values():
        assert choices[0]["delta"]["role"] == "assistant"
        assert [c["finish_reason"] for c in choices if c["finish_reason"]] == ["stop"]
    seeds = [params.seed for _, _, params in client.fakes[0].requests[-3:]]
    assert len(set(seeds)) == 3
    texts = {"".join(c["delta"].get("content", "") for c in v) for v in by_index.values()}
    assert len(texts) > 1


async def test_n_choices_non_streaming(client):
    body = await (await client.post("/v1/chat/completions", json={"messages": MESSAGES, "n": 2})).json()
    assert [c["index"] for c in body["choices"]] == [0, 1]
    single = await (await client.post("/v1/chat/completions", json={"messages": MESSAGES})).json()
    assert body["usage"]["prompt_tokens"] == single["usage"]["prompt_tokens"]
    assert body["usage"]["completion_tokens"] == 2 * single["usage"]["completion_tokens"]


async def test_stop_string_and_length(client):
    body = await (await client.post("/v1/chat/completions", json={"messages": MESSAGES, "stop": " world"})).json()
    assert body["choices"][0]["message"]["content"] == "Hello,"
    assert body["choices"][0]["finish_reason"] == "stop"
    assert client.fakes[0].requests[-1][2].stop == [" world"]
    body = await (await client.post("/v1/chat/completions", json={"messages": MESSAGES, "max_tokens": 2})).json()
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["completion_tokens"] == 2


async def test_sampling_fields_reach_the_engine(client):
    payload = {
        "messages": MESSAGES, "temperature": 0.5, "top_p": 0.9, "top_k": 5, "min_p": 0.1, "seed": 3,
        "max_completion_tokens": 9, "presence_penalty": 0.5, "frequency_penalty": -0.5,
        "repetition_penalty": 1.1, "logit_bias": {"5": 10}, "ignore_eos": True, "min_tokens": 2,
        "stop_token_ids": [3], "some_unknown_field": {"x": 1},
    }
    resp = await client.post("/v1/chat/completions", json=payload)
    assert resp.status == 200, await resp.text()
    params = client.fakes[0].requests[-1][2]
    assert (params.temperature, params.top_p, params.top_k, params.min_p, params.seed) == (0.5, 0.9, 5, 0.1, 3)
    assert (params.max_tokens, params.presence_penalty, params.frequency_penalty) == (9, 0.5, -0.5)
    assert params.repetition_penalty == 1.1 and params.logit_bias == {5: 10.0}
    assert params.ignore_eos and params.min_tokens == 2 and params.stop_token_ids == [3]


async def test_logprobs(client):
    payload = {"messages": MESSAGES, "logprobs": True, "top_logprobs": 2, "max_tokens": 3}
    body = await (await client.post("/v1/chat/completions", json=payload)).json()
    entries = body["choices"][0]["logprobs"]["content"]
    assert len(entries) == body["usage"]["completion_tokens"]
    assert all(len(e["top_logprobs"]) == 2 and e["logprob"] == -0.25 for e in entries)
    assert "".join(e["token"] for e in entries) == body["choices"][0]["message"]["content"]
    events = await read_events(await client.post("/v1/chat/completions", json={**payload, "stream": True}))
    streamed = [e for c in events[:-1] if c["choices"][0]["logprobs"] for e in c["choices"][0]["logprobs"]["content"]]
    assert streamed == entries


async def test_content_parts_and_tool_messages(client):
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "Hel"}, {"type": "text", "text": "lo"}]},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "42"},
    ]
    resp = await client.post("/v1/chat/completions", json={"messages": messages})
    assert resp.status == 200, await resp.text()
    text = client.fakes[0].tokenizer.decode(client.fakes[0].requests[-1][1])
    assert "user\nHello<|im_end|>" in text and "tool\n42<|im_end|>" in text


async def test_tools_reach_the_template(client):
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    resp = await client.post("/v1/chat/completions", json={"messages": MESSAGES, "tools": tools})
    assert resp.status == 200
    text = client.fakes[0].tokenizer.decode(client.fakes[0].requests[-1][1])
    assert "get_weather" in text and "You may call tools" in text


async def test_continue_final_message(client):
    messages = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Well"}]
    resp = await client.post("/v1/chat/completions", json={"messages": messages, "continue_final_message": True})
    assert resp.status == 200, await resp.text()
    text = client.fakes[0].tokenizer.decode(client.fakes[0].requests[-1][1])
    assert text.endswith("assistant\nWell")
