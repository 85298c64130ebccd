"""The playground's Responses switch (gateway/static/js/responses.js) run by node: the events of a real
streamed /v1/responses reply fold into the same message as the chat reply, and a continued conversation
sends only its newer turns after previous_response_id."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from gateway.parser_config import ParserConfig
from gateway.routes_playground import STATIC_DIR
from gateway.state import GatewaySettings
from tests.gateway.sse_helpers import read_named_events

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")
PIECES = ["Let me check.", "<tool_call>", '{"name": "get_weather", "arguments": {"city": "Paris"}}', "</tool_call>"]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
FOLD = """
import { asChatChunks, responsesBody } from "./js/responses.js";
import { applyChunk, newReply } from "./js/reply.js";
import { readFileSync } from "node:fs";
const input = JSON.parse(readFileSync(process.argv[2], "utf8"));
async function* events() { yield* input.events; }
const msg = newReply(null);
for await (const chunk of asChatChunks(events())) applyChunk(msg, chunk);
const bodies = input.conversations.map(([chat, messages]) => responsesBody(chat, messages));
console.log(JSON.stringify({ msg, bodies }));
"""


def _run_node(tmp_path, data: dict) -> dict:
    work = tmp_path / "static"
    shutil.copytree(STATIC_DIR, work)
    (work / "package.json").write_text('{"type": "module"}')
    (work / "fold.js").write_text(FOLD)
    (tmp_path / "input.json").write_text(json.dumps(data))
    done = subprocess.run([NODE, str(work / "fold.js"), str(tmp_path / "input.json")], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


async def test_response_events_fold_like_chat_and_continue_by_id(make_client, tmp_path):
    settings = GatewaySettings(parsers=ParserConfig(tool_parser="hermes"))
    client = await make_client(settings, script=lambda prompt, params: list(PIECES), max_model_len=2048)
    chat = {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather?"}],
            "tools": TOOLS, "tool_choice": "auto", "max_tokens": 64, "temperature": 0.5, "min_p": 0.1,
            "response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": {}, "strict": True}}}
    page = [{"role": "user", "content": "Weather?"}]
    whole = (await (await client.post("/v1/chat/completions", json={"messages": page, "tools": TOOLS})).json())
    events = await read_named_events(await client.post("/v1/responses", json={
        "input": "Weather?", "tools": [{"type": "function", "name": "get_weather"}], "stream": True}))
    replied = {**whole["choices"][0]["message"], "response_id": "resp_1", "state": "done",
               "tool_calls": whole["choices"][0]["message"]["tool_calls"]}
    later = [*page, replied, {"role": "tool", "tool_call_id": "call_1", "content": "22 C"}]
    out = _run_node(tmp_path, {"events": [data for _, data in events],
                               "conversations": [[chat, page], [chat, later]]})  # fmt: skip
    msg, expected = out["msg"], whole["choices"][0]["message"]
    assert msg["content"] == expected["content"] == "Let me check."
    assert msg["reasoning"] == ""
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in msg["tool_calls"]] == [
        (c["function"]["name"], c["function"]["arguments"]) for c in expected["tool_calls"]]
    assert msg["finish_reason"] == "tool_calls" and msg["response_id"] == events[0][1]["response"]["id"]
    assert msg["usage"]["completion_tokens"] > 0
    first, second = out["bodies"]
    assert first["input"] == [{"type": "message", "role": "user", "content": "Weather?"}]
    assert "previous_response_id" not in first and first["instructions"] == "Be brief."
    assert first["max_output_tokens"] == 64 and first["temperature"] == 0.5 and "min_p" not in first
    assert first["tools"] == [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]
    assert first["text"] == {"format": {"type": "json_schema", "name": "p", "schema": {}, "strict": True}}
    assert second["previous_response_id"] == "resp_1"
    assert second["input"] == [{"type": "function_call_output", "call_id": "call_1", "output": "22 C"}]
    resp = await client.post("/v1/responses", json={**first, "stream": False, "text": None})
    assert resp.status == 200  # what the page builds, the server takes
