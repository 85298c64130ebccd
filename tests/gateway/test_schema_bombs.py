"""Schema bombs through the gateway (issue 22): refused with a 400 or compiled in time, never a stall of later requests."""

from __future__ import annotations

import asyncio
import threading
import time

from tests.gateway.test_errors import _expect_error

MESSAGES = [{"role": "user", "content": "Hi"}]
GOOD = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}


def _fmt(schema) -> dict:
    return {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}


async def _post(client, schema):
    return await client.post("/v1/chat/completions", json={"messages": MESSAGES, "max_tokens": 3,
                                                            "response_format": _fmt(schema)})  # fmt: skip


async def _good_quickly(client, within_s: float) -> None:
    start = time.monotonic()
    resp = await _post(client, GOOD)
    assert resp.status == 200, await resp.text()
    assert time.monotonic() - start < within_s


async def test_bombs_are_refused_or_compiled_and_the_next_request_is_served(client):
    client.fakes[0].grammar_compile_timeout = 10.0
    ref_loop = {"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}}
    error = await _expect_error(await _post(client, ref_loop), 400, "response_format")
    assert "accepts no text" in error["message"]
    start = time.monotonic()
    resp = await _post(client, {"type": "array", "items": {"type": "integer"}, "minItems": 1_000_000_000})
    assert resp.status == 200, await resp.text()  # a counted repeat: compiles at once
    assert time.monotonic() - start < 5.0
    await _good_quickly(client, 5.0)


async def test_compiles_past_their_limit_hold_up_no_later_request(client, monkeypatch):
    """Three compiles that ignore their deadline (held far past it on an event only the test sets)
    are each a 400 at the limit; a normal request right after is served while their threads are
    still held, so it cannot have waited for them (no clock decides this)."""
    import engine.structured

    real = engine.structured.compile_spec
    release = threading.Event()

    def slow_for_bombs(spec, *args):
        if spec.json_schema is not None and "bomb" in spec.json_schema:
            release.wait(300)
        return real(spec, *args)

    monkeypatch.setattr(engine.structured, "compile_spec", slow_for_bombs)
    client.fakes[0].grammar_compile_timeout = 0.5
    bomb = {"type": "string", "description": "bomb"}
    try:
        replies = await asyncio.gather(*[_post(client, bomb) for _ in range(3)])
        for resp in replies:
            error = await _expect_error(resp, 400, "response_format")
            assert "exceeded" in error["message"]
        client.fakes[0].grammar_compile_timeout = 60.0
        resp = await asyncio.wait_for(_post(client, GOOD), 120)
        assert resp.status == 200, await resp.text()
        assert not release.is_set()  # the bombs' threads are still held
    finally:
        release.set()
