"""Chat output through parsing/: reasoning and tool-call deltas, streamed and not, agree."""

from __future__ import annotations

import json
import logging

import pytest

import parsing
from gateway.parser_config import ParserConfig
from gateway.state import SERVICES, GatewaySettings
from tests.gateway.fake_engine import FakeLLM
from tests.gateway.sse_helpers import read_events

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]
MESSAGES = [{"role": "user", "content": "Weather in Paris?"}]
CALL_TEXT = ["Let me check.", "<tool_call>", '{"name": "get_wea', 'ther", "arguments": {"ci', 'ty": "Pa',
             'ris"}}', "</tool_call>"]
THINK_TEXT = ["<think>", "The user ", "greets.", "</think>", "Hello", " there"]


def _script(pieces):
    return lambda prompt_ids, params: list(pieces)


async def _client(make_client, pieces, **parsers):
    settings = GatewaySettings(parsers=ParserConfig(**parsers))
    return await make_client(settings, script=_script(pieces))


async def test_tool_calls_stream_and_agree(make_client):
    client = await _client(make_client, CALL_TEXT, tool_parser="hermes")
    payload = {"messages": MESSAGES, "tools": TOOLS}
    body = await (await client.post("/v1/chat/completions", json=payload)).json()
    choice = body["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    message = choice["message"]
    assert message["content"] == "Let me check."
    (call,) = message["tool_calls"]
    assert call["type"] == "function" and call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == {"city": "Paris"}

    events = await read_events(await client.post("/v1/chat/completions", json={**payload, "stream": True}))
    deltas = [e["choices"][0]["delta"] for e in events[:-1]]
    fragments = [t for d in deltas for t in d.get("tool_calls", [])]
    assert fragments[0]["id"] and fragments[0]["type"] == "function"
    assert fragments[0]["function"]["name"] == "get_weather"
    assert all("name" not in f["function"] and "id" not in f for f in fragments[1:])
    assert all(f["index"] == 0 for f in fragments)
    assert "".join(f["function"]["arguments"] for f in fragments) == call["function"]["arguments"]
    assert "".join(d.get("content") or "" for d in deltas) == "Let me check."
    assert [e["choices"][0]["finish_reason"] for e in events[:-1] if e["choices"][0]["finish_reason"]] == ["tool_calls"]


async def test_no_tools_means_no_tool_parsing(make_client):
    client = await _client(make_client, CALL_TEXT, tool_parser="hermes")
    body = await (await client.post("/v1/chat/completions", json={"messages": MESSAGES})).json()
    assert body["choices"][0]["message"]["content"] == "".join(CALL_TEXT)
    assert body["choices"][0]["finish_reason"] == "stop"


async def test_reasoning_field(make_client):
    client = await _client(make_client, THINK_TEXT, reasoning_parser="qwen3")
    body = await (await client.post("/v1/chat/completions", json={"messages": MESSAGES})).json()
    message = body["choices"][0]["message"]
    assert message == {"role": "assistant", "content": "Hello there", "reasoning_content": "The user greets."}
    events = await read_events(await client.post("/v1/chat/completions", json={"messages": MESSAGES, "stream": True}))
    deltas = [e["choices"][0]["delta"] for e in events[:-1]]
    assert "".join(d.get("reasoning_content", "") for d in deltas) == "The user greets."
    assert "".join(d.get("content", "") for d in deltas) == "Hello there"


async def test_reasoning_field_both(make_client):
    settings = GatewaySettings(parsers=ParserConfig(reasoning_parser="qwen3"), reasoning_field="both")
    client = await make_client(settings, script=_script(THINK_TEXT))
    message = (await (await client.post("/v1/chat/completions", json={"messages": MESSAGES})).json())["choices"][0]["message"]
    assert message["reasoning_content"] == message["reasoning"] == "The user greets."
    events = await read_events(await client.post("/v1/chat/completions", json={"messages": MESSAGES, "stream": True}))
    deltas = [e["choices"][0]["delta"] for e in events[:-1]]
    assert "".join(d.get("reasoning", "") for d in deltas) == "".join(d.get("reasoning_content", "") for d in deltas)


async def test_auto_detects_from_the_template(make_client):
    client = await _client(make_client, CALL_TEXT, tool_parser="auto")
    body = await (await client.post("/v1/chat/completions", json={"messages": MESSAGES, "tools": TOOLS})).json()
    assert body["choices"][0]["finish_reason"] == "tool_calls"


async def test_named_tool_choice_finishes_with_stop(make_client):
    client = await _client(make_client, CALL_TEXT, tool_parser="hermes")
    payload = {"messages": MESSAGES, "tools": TOOLS,
               "tool_choice": {"type": "function", "function": {"name": "get_weather"}}}
    body = await (await client.post("/v1/chat/completions", json=payload)).json()
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["choices"][0]["message"]["tool_calls"]


async def test_required_tool_choice_constrains_generation(make_client):
    client = await _client(make_client, CALL_TEXT, tool_parser="hermes")
    payload = {"messages": MESSAGES, "tools": TOOLS, "tool_choice": "required"}
    body = await (await client.post("/v1/chat/completions", json=payload)).json()
    assert body["choices"][0]["finish_reason"] == "tool_calls"
    spec = json.loads(client.fakes[0].requests[-1][2].structured.structural_tag)
    assert spec["min_calls"] == 1 and "max_calls" not in spec
    (alt,) = spec["alternatives"]
    assert alt["begin"] == '<tool_call>\n{"name": "get_weather", "arguments": '
    assert alt["end"] == "}\n</tool_call>" and alt["schema"] == TOOLS[0]["function"]["parameters"]
    named = {**payload, "tool_choice": {"type": "function", "function": {"name": "get_weather"}}}
    await client.post("/v1/chat/completions", json=named)
    assert json.loads(client.fakes[0].requests[-1][2].structured.structural_tag)["max_calls"] == 1


async def test_required_tool_choice_needs_a_tool_parser(make_client):
    client = await _client(make_client, CALL_TEXT, tool_parser="none")
    payload = {"messages": MESSAGES, "tools": TOOLS, "tool_choice": "required"}
    resp = await client.post("/v1/chat/completions", json=payload)
    assert resp.status == 400 and (await resp.json())["error"]["param"] == "tool_choice"
    assert "--tool-parser" in (await resp.json())["error"]["message"]


def _reasoning_text(fmt: str) -> list[str]:
    begin, end = parsing.reasoning_tags(fmt)
    return [begin, "The user ", "greets.", end, "Hello", " there"]


async def test_parsers_are_on_by_default(make_client):
    """GatewaySettings() holds the CLI's defaults: both parsers "auto" (hermes for the tiny ChatML template)."""
    client = await make_client(script=_script(_reasoning_text("hermes") + CALL_TEXT), max_model_len=2048)
    services = client.server.app[SERVICES]
    assert (services.parsers.tool_parser, services.parsers.reasoning_parser) == ("hermes", "hermes")
    body = await (await client.post("/v1/chat/completions", json={"messages": MESSAGES, "tools": TOOLS})).json()
    message = body["choices"][0]["message"]
    assert message["reasoning_content"] == "The user greets." and message["tool_calls"]
    assert body["choices"][0]["finish_reason"] == "tool_calls"
    payload = {"messages": MESSAGES, "tools": TOOLS, "tool_choice": "required"}
    assert (await client.post("/v1/chat/completions", json=payload)).status == 200


async def test_no_tools_leave_call_markup_in_the_content_but_reasoning_is_parsed(make_client):
    client = await make_client(script=_script(_reasoning_text("hermes") + CALL_TEXT), max_model_len=2048)
    message = (await (await client.post("/v1/chat/completions", json={"messages": MESSAGES})).json())["choices"][0]["message"]
    assert message["reasoning_content"] == "The user greets."
    assert message["content"] == "Hello there" + "".join(CALL_TEXT) and "tool_calls" not in message


async def test_none_turns_parsers_off(make_client):
    client = await _client(make_client, THINK_TEXT + CALL_TEXT, tool_parser="none", reasoning_parser="none")
    body = await (await client.post("/v1/chat/completions", json={"messages": MESSAGES, "tools": TOOLS})).json()
    assert body["choices"][0]["message"]["content"] == "".join(THINK_TEXT + CALL_TEXT)


@pytest.fixture(scope="module")
def plain_tokenizer(tmp_path_factory):
    """A tokenizer whose chat template names no tool or reasoning markup (no format can be detected)."""
    from transformers import AutoTokenizer

    from tests.helpers.tiny_model import make_tiny_model

    tok = AutoTokenizer.from_pretrained(str(make_tiny_model(tmp_path_factory.mktemp("plain"), "llama")))
    tok.chat_template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
    return _NoChatMLTokens(tok)


class _NoChatMLTokens:
    """The tiny tokenizer, minus the ChatML special tokens that detection would take for hermes."""

    def __init__(self, tok) -> None:
        self._tok = tok
        self.all_special_tokens = ["<|endoftext|>"]

    def __getattr__(self, name):
        return getattr(self._tok, name)

    def __len__(self) -> int:
        return len(self._tok)


async def test_undetectable_format_logs_and_serves_tools_as_prompt_text(make_client, plain_tokenizer, caplog):
    fake = FakeLLM(plain_tokenizer, script=_script(THINK_TEXT + CALL_TEXT), max_model_len=2048)
    with caplog.at_level(logging.WARNING, logger="gateway"):
        client = await make_client(engines=[fake])
    assert "No tool-call or reasoning format detected" in caplog.text
    strict = [{**TOOLS[0], "function": {**TOOLS[0]["function"], "strict": True}}]
    for tools, choice in ((TOOLS, "auto"), (TOOLS, None), (strict, "auto")):
        payload = {"messages": MESSAGES, "tools": tools, **({"tool_choice": choice} if choice else {})}
        resp = await client.post("/v1/chat/completions", json=payload)
        body = await resp.json()
        assert resp.status == 200, body
        assert body["choices"][0]["message"]["content"] == "".join(THINK_TEXT + CALL_TEXT)
        assert body["choices"][0]["finish_reason"] == "stop"
        prompt = plain_tokenizer.decode(fake.requests[-1][1])
        assert "get_weather" in prompt and "You have access to the following tools" in prompt
    resp = await client.post("/v1/chat/completions", json={"messages": MESSAGES, "tools": TOOLS, "tool_choice": "required"})
    assert resp.status == 400 and "none was detected" in (await resp.json())["error"]["message"]


async def test_parallel_tool_calls_false_reports_only_the_first_call(make_client):
    second = ["<tool_call>", '{"name": "get_weather", "arguments": {"city": "Rome"}}', "</tool_call>"]
    client = await _client(make_client, CALL_TEXT + second + [" done"], tool_parser="hermes")
    payload = {"messages": MESSAGES, "tools": TOOLS, "parallel_tool_calls": False}
    body = await (await client.post("/v1/chat/completions", json=payload)).json()
    message = body["choices"][0]["message"]
    (call,) = message["tool_calls"]
    assert json.loads(call["function"]["arguments"]) == {"city": "Paris"}
    assert "Rome" not in json.dumps(message)
    events = await read_events(await client.post("/v1/chat/completions", json={**payload, "stream": True}))
    fragments = [t for e in events[:-1] for t in e["choices"][0]["delta"].get("tool_calls", [])]
    assert {f["index"] for f in fragments} == {0}
    assert "Rome" not in json.dumps(events)
    # the default (parallel calls allowed) keeps both
    body = await (await client.post("/v1/chat/completions", json={**payload, "parallel_tool_calls": True})).json()
    assert len(body["choices"][0]["message"]["tool_calls"]) == 2
