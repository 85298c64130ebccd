"""Data parallel pool: least-loaded routing, a dead core's requests end with errors, the rest go on."""

from __future__ import annotations

import asyncio
import json

from tests.gateway.fake_engine import DEFAULT_PIECES, FakeLLM
from tests.gateway.sse_helpers import read_events
from tests.helpers.waiting import wait_for, wait_until

PAYLOAD = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 50}


async def test_least_loaded_routing(make_client, tokenizer):
    """All six are routed while the engines are paused, so none ends before the last is placed. Their
    first KV blocks differ (the default prefix routing has no prefix to follow)."""
    engines = [FakeLLM(tokenizer), FakeLLM(tokenizer)]
    client = await make_client(engines=engines)
    for engine in engines:
        engine.pause()
    payloads = [{**PAYLOAD, "messages": [{"role": "user", "content": f"Hi {i}"}]} for i in range(6)]
    posts = [asyncio.create_task(client.post("/v1/chat/completions", json=p)) for p in payloads]
    await wait_until(lambda: sum(e.num_inflight for e in engines) == 6)
    for engine in engines:
        engine.resume()
    responses = await asyncio.gather(*posts)
    assert all(r.status == 200 for r in responses)
    assert [len(e.requests) for e in engines] == [3, 3]


class HoldingFake(FakeLLM):
    """Pauses itself once a request has streamed its first piece: that stream is surely mid-way when
    the test kills the engine, and a request sent after it cannot start."""

    async def _steps(self, prompt_token_ids, params):
        first = True
        async for out in super()._steps(prompt_token_ids, params):
            yield out
            if first:
                first = False
                self.pause()


async def _first_content(resp) -> str:
    """Reads SSE events until one carries text (the client has received a token)."""
    buffer = b""
    while True:
        data = await resp.content.readany()
        assert data, "the stream ended before any text"
        buffer += data
        for raw in buffer.split(b"\n\n")[:-1]:
            event = json.loads(raw[len(b"data: "):])
            if event["choices"] and event["choices"][0]["delta"].get("content"):
                return event["choices"][0]["delta"]["content"]


async def test_killed_core_fails_started_streams_moves_the_others_and_is_restarted(make_client, tokenizer):
    """The victim holds one stream that has sent a token and one same-prompt request (prefix routing
    sends it to the same core) that has not; the kill ends the first with an error event and moves
    the second to the survivor, where it completes; then the core is restarted."""
    victim, survivor = engines = [HoldingFake(tokenizer, step_delay_s=0.01), FakeLLM(tokenizer, step_delay_s=0.01)]
    client = await make_client(engines=engines, step_delay_s=0.01)
    started = await client.post("/v1/chat/completions", json={**PAYLOAD, "stream": True})
    assert await _first_content(started)
    assert victim.num_inflight == 1
    waiting = asyncio.create_task(client.post("/v1/chat/completions", json={**PAYLOAD, "stream": True}))
    await wait_until(lambda: victim.num_inflight == 2)
    victim.kill()
    lost = await read_events(started)
    assert lost[-1] == "[DONE]" and lost[-2]["error"]["code"] == "engine_unavailable"
    assert "after streaming part of this response" in lost[-2]["error"]["message"]
    moved = await read_events(await waiting)
    assert moved[-1] == "[DONE]" and moved[-2]["choices"][0]["finish_reason"] == "stop"
    assert "".join(e["choices"][0]["delta"].get("content") or "" for e in moved[:-1] if e["choices"]) == "".join(DEFAULT_PIECES)
    assert len(survivor.requests) == 1 and survivor.num_free_blocks == survivor.num_total_blocks
    health = await (await client.get("/health")).json()
    assert health["replicas"][0]["failovers"] == 1

    async def restarted() -> bool:  # the supervisor restarts the dead core
        health = await (await client.get("/health")).json()
        return {k: health[k] for k in ("status", "engines_alive", "engines")} == {
            "status": "ok", "engines_alive": 2, "engines": 2} and len(client.fakes) == 3

    await wait_for(restarted)
    good = await asyncio.gather(*(client.post("/v1/chat/completions", json=PAYLOAD) for _ in range(4)))
    assert all(r.status == 200 for r in good)
    assert "gateway_engine_restarts 1.0" in await (await client.get("/metrics")).text()
