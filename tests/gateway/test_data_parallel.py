"""Data parallel pool: least-loaded routing, a dead core's requests end with errors, the rest go on."""

from __future__ import annotations

import asyncio

from tests.gateway.fake_engine import FakeLLM
from tests.gateway.sse_helpers import read_events
from tests.helpers.waiting import wait_for, wait_until

PAYLOAD = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 50}


async def test_least_loaded_routing(make_client, tokenizer):
    """All six are routed while the engines are paused, so none ends before the last is placed."""
    engines = [FakeLLM(tokenizer), FakeLLM(tokenizer)]
    client = await make_client(engines=engines)
    for engine in engines:
        engine.pause()
    posts = [asyncio.create_task(client.post("/v1/chat/completions", json=PAYLOAD)) for _ in range(6)]
    await wait_until(lambda: sum(e.num_inflight for e in engines) == 6)
    for engine in engines:
        engine.resume()
    responses = await asyncio.gather(*posts)
    assert all(r.status == 200 for r in responses)
    assert [len(e.requests) for e in engines] == [3, 3]


async def test_killed_core_fails_its_requests_and_is_restarted(make_client, tokenizer):
    """Paused engines hold one stream each (and the plain request) while one is killed: the kill
    surely lands mid-stream, whatever the machine's speed."""
    engines = [FakeLLM(tokenizer), FakeLLM(tokenizer)]
    client = await make_client(engines=engines, step_delay_s=0.01)
    for engine in engines:
        engine.pause()
    streams = [await client.post("/v1/chat/completions", json={**PAYLOAD, "stream": True}) for _ in range(2)]
    plain = asyncio.create_task(client.post("/v1/chat/completions", json=PAYLOAD))
    await wait_until(lambda: sum(e.num_inflight for e in engines) == 3)
    victim, survivor = engines
    assert victim.num_inflight >= 1 and survivor.num_inflight >= 1
    victim.kill()
    survivor.resume()
    results = [await read_events(s) for s in streams]
    errors = [r for r in results if any(isinstance(e, dict) and "error" in e for e in r)]
    finished = [r for r in results if r not in errors and r[-2]["choices"][0]["finish_reason"] == "stop"]
    assert len(errors) == 1 and len(finished) == 1
    assert errors[0][-1] == "[DONE]" and errors[0][-2]["error"]["code"] == "engine_unavailable"
    resp = await plain
    assert resp.status in (200, 503)

    async def restarted() -> bool:  # the supervisor restarts the dead core
        health = await (await client.get("/health")).json()
        return health == {"status": "ok", "engines_alive": 2, "engines": 2} and len(client.fakes) == 3

    await wait_for(restarted)
    good = await asyncio.gather(*(client.post("/v1/chat/completions", json=PAYLOAD) for _ in range(4)))
    assert all(r.status == 200 for r in good)
    assert "gateway_engine_restarts 1.0" in await (await client.get("/metrics")).text()
