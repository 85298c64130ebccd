"""Schema bombs in response_format and tools (reference loops, 100,000-value enums, minItems 1e9,
catastrophic patterns, megabyte schemas): each is refused or compiled within --grammar-compile-timeout,
and a plain request alongside is not held up. Runs after the fuzz and the soak on the shared server
(a timed-out compile may keep a grammar worker thread busy; issue 17 owns the grammar compiler)."""

from __future__ import annotations

import asyncio
import json
import time

import aiohttp
import pytest

from tests.robustness.client import CHAT, GOOD, healthy, judge


def _schema_format(schema: dict) -> dict:
    return {"type": "json_schema", "json_schema": {"name": "bomb", "schema": schema}}


_REF_LOOP = {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}
_BIG_SCHEMA = {"type": "object", "properties": {f"p{i}": {"type": "string", "description": "x" * 200} for i in range(5000)}}
SCHEMA_BOMBS = {
    "ref_loop": _schema_format(_REF_LOOP),
    "megabyte_schema": _schema_format(_BIG_SCHEMA),
    "min_items_1e9": _schema_format({"type": "array", "items": {"type": "integer"}, "minItems": 1_000_000_000}),
    "enum_100k": _schema_format({"enum": [f"value-{i}" for i in range(100_000)]}),
    "catastrophic_pattern": _schema_format({"type": "string", "pattern": "(a+)+$"}),
}


@pytest.mark.parametrize("name", sorted(SCHEMA_BOMBS))
async def test_schema_bombs_are_refused_or_compiled_in_time_without_stalling_others(robust_server, name):
    """Each bomb answers within the compile limit (5 s here) plus slack, and a plain request sent
    alongside is not held up by it; as response_format, and (the reference loop) in a tool's parameters."""
    body = {**GOOD, "response_format": SCHEMA_BOMBS[name]}
    tool = {"type": "function", "function": {"name": "f", "parameters": SCHEMA_BOMBS[name]["json_schema"]["schema"]}}
    tool_body = {**GOOD, "tools": [tool], "tool_choice": "required"}
    headers = {"Content-Type": "application/json"}
    async with aiohttp.ClientSession(robust_server.url) as http:
        for bomb in (body, tool_body) if name == "ref_loop" else (body,):
            started = time.monotonic()
            bomb_task = asyncio.create_task(judge(http, "POST", CHAT, json.dumps(bomb).encode(), headers, timeout_s=30))
            await asyncio.sleep(0.5)
            plain = await judge(http, "POST", CHAT, json.dumps(GOOD).encode(), headers, timeout_s=10)
            status, problem = await bomb_task
            assert problem is None, problem
            assert time.monotonic() - started < 20
            assert plain == (200, None), f"a plain request alongside the bomb: {plain}"
        assert await healthy(http) is None
