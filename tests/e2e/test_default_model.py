"""A few end-to-end checks on the real default model (SmolLM2-135M-Instruct): slow, kept few."""

from __future__ import annotations

import openai
import pytest

from tests.e2e.conftest import ServerProcess

pytestmark = pytest.mark.model
QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


@pytest.fixture(scope="module")
def default_server():
    proc = ServerProcess("--max-model-len", "2048")  # parsers are auto by default
    try:
        proc.wait_ready(timeout_s=600)
        yield proc
    finally:
        proc.stop()


def test_answers_and_streams_the_same(default_server):
    client = openai.OpenAI(base_url=default_server.url + "/v1", api_key="x", max_retries=0, timeout=300)
    model = client.models.list().data[0]  # the chat model (an embedding model follows when installed)
    kwargs = dict(model=model.id, messages=QUESTION, temperature=0, max_tokens=24)
    full = client.chat.completions.create(**kwargs)
    text = full.choices[0].message.content
    assert "Paris" in text
    stream = client.chat.completions.create(**kwargs, stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == text
    assert chunks[-1].usage.prompt_tokens_details.cached_tokens > 0  # the same prompt again: prefix cache hit
    assert chunks[-1].usage.completion_tokens == full.usage.completion_tokens


def test_required_tool_call(default_server):
    """The default template has no tools: they go into the system prompt; the grammar forces a call."""
    import json

    client = openai.OpenAI(base_url=default_server.url + "/v1", api_key="x", max_retries=0, timeout=300)
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Get the weather for a city",
              "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    reply = client.chat.completions.create(
        model=client.models.list().data[0].id, messages=[{"role": "user", "content": "What is the weather in Paris?"}],
        tools=tools, tool_choice="required", parallel_tool_calls=False, max_tokens=60, temperature=0)
    assert reply.choices[0].finish_reason == "tool_calls"
    (call,) = reply.choices[0].message.tool_calls
    assert call.function.name == "get_weather"
    assert "city" in json.loads(call.function.arguments)


def test_auto_tool_choice_streams_what_it_returns(default_server):
    """tool_choice left to the model: the parser's streamed deltas add up to the one-shot reply, no markup leaks."""
    import json

    client = openai.OpenAI(base_url=default_server.url + "/v1", api_key="x", max_retries=0, timeout=300)
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Get the weather for a city",
              "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    kwargs = dict(model=client.models.list().data[0].id, tools=tools, tool_choice="auto", max_tokens=80, temperature=0,
                  messages=[{"role": "user", "content": "What is the weather in Paris? Use the get_weather tool."}])
    message = client.chat.completions.create(**kwargs).choices[0]
    content, calls = "", {}
    for chunk in client.chat.completions.create(**kwargs, stream=True):
        for choice in chunk.choices:
            content += choice.delta.content or ""
            for delta in choice.delta.tool_calls or []:
                call = calls.setdefault(delta.index, {"name": "", "arguments": ""})
                call["name"] += (delta.function.name or "") if delta.function else ""
                call["arguments"] += (delta.function.arguments or "") if delta.function else ""
    assert content == (message.message.content or "")
    assert "<tool_call>" not in content and "</tool_call>" not in content
    one_shot = [{"name": c.function.name, "arguments": c.function.arguments} for c in message.message.tool_calls or []]
    assert [calls[i] for i in sorted(calls)] == one_shot
    for call in one_shot:
        assert call["name"] == "get_weather" and isinstance(json.loads(call["arguments"]), dict)
    if one_shot:
        assert message.finish_reason == "tool_calls"
