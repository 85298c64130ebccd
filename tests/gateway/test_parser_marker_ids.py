"""Markers that are control tokens reach the parser by id: the gateway maps them at startup and
feeds each delta's token ids beside its text."""

from __future__ import annotations

import json

from gateway.chat_output import open_output
from gateway.parser_config import ParserConfig, marker_token_ids, resolve_parsers
from gateway.state import GatewaySettings
from tests.gateway.sse_helpers import read_events

SPECIAL = {"[TOOL_CALLS]": 5, "[ARGS]": 6}


class StubTokenizer:
    """Two control tokens (skipped by skip_special_tokens) and a plain-text token 7 for "[THINK]"."""

    unk_token_id = 0
    chat_template = ""
    all_special_tokens: list[str] = []

    def convert_tokens_to_ids(self, token: str) -> int:
        return {**SPECIAL, "[THINK]": 7}.get(token, 0)

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        names = {v: k for k, v in {**SPECIAL, "[THINK]": 7}.items()}
        return "".join("" if skip_special_tokens and i in SPECIAL.values() else names.get(i, "?") for i in ids)


def test_only_skipped_control_tokens_are_mapped() -> None:
    ids = marker_token_ids(StubTokenizer(), ["[TOOL_CALLS]", "[ARGS]", "[THINK]", "[CALL_ID]"])
    assert dict(ids) == {5: "[TOOL_CALLS]", 6: "[ARGS]"}
    config = resolve_parsers(ParserConfig(tool_parser="mistral"), StubTokenizer())
    assert dict(config.marker_ids["mistral"]) == {5: "[TOOL_CALLS]", 6: "[ARGS]"}


def test_open_output_feeds_token_ids() -> None:
    config = resolve_parsers(ParserConfig(tool_parser="mistral"), StubTokenizer())
    stream = open_output(config, [{"type": "function", "function": {"name": "f"}}], "")
    parts = [stream.feed("Ok.", [1]), stream.feed("", [5]), stream.feed("f", [2]), stream.feed("", [6]),
             stream.feed('{"a": 1}', [3, 4]), stream.close()]
    calls = [c for p in parts for c in p.tool_calls]
    assert "".join(p.content for p in parts) == "Ok."
    assert calls[0].name == "f" and json.loads("".join(c.arguments for c in calls)) == {"a": 1}


async def test_chat_route_passes_token_ids(make_client) -> None:
    """The fake engine's tokenizer has no control tokens: text-only markers still parse."""
    pieces = ["Let me check.", "<tool_call>", '{"name": "f", "arguments": {}}', "</tool_call>"]
    client = await make_client(GatewaySettings(parsers=ParserConfig(tool_parser="hermes")),
                               script=lambda prompt_ids, params: list(pieces))
    payload = {"messages": [{"role": "user", "content": "hi"}], "stream": True,
               "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]}
    events = await read_events(await client.post("/v1/chat/completions", json=payload))
    fragments = [t for e in events[:-1] for t in e["choices"][0]["delta"].get("tool_calls", [])]
    assert fragments[0]["function"]["name"] == "f"
