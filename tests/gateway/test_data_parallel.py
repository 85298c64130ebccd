"""Data parallel pool: least-loaded routing, a dead core's requests end with errors, the rest go on."""

from __future__ import annotations

import asyncio

from tests.gateway.fake_engine import FakeLLM
from tests.gateway.sse_helpers import read_events

PAYLOAD = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 50}


async def test_least_loaded_routing(make_client, tokenizer):
    engines = [FakeLLM(tokenizer, step_delay_s=0.05), FakeLLM(tokenizer, step_delay_s=0.05)]
    client = await make_client(engines=engines)
    responses = await asyncio.gather(*(client.post("/v1/chat/completions", json=PAYLOAD) for _ in range(6)))
    assert all(r.status == 200 for r in responses)
    assert [len(e.requests) for e in engines] == [3, 3]


async def test_killed_core_fails_its_requests_and_is_restarted(make_client, tokenizer):
    engines = [FakeLLM(tokenizer, step_delay_s=0.1), FakeLLM(tokenizer, step_delay_s=0.1)]
    client = await make_client(engines=engines, step_delay_s=0.01)
    streams = [await client.post("/v1/chat/completions", json={**PAYLOAD, "stream": True}) for _ in range(2)]
    plain = asyncio.create_task(client.post("/v1/chat/completions", json=PAYLOAD))
    await asyncio.sleep(0.05)
    victim = engines[0]
    assert victim.num_inflight >= 1
    victim.kill()
    results = [await read_events(s) for s in streams]
    errors = [r for r in results if any(isinstance(e, dict) and "error" in e for e in r)]
    finished = [r for r in results if r not in errors and r[-2]["choices"][0]["finish_reason"] == "stop"]
    assert len(errors) == 1 and len(finished) == 1
    assert errors[0][-1] == "[DONE]" and errors[0][-2]["error"]["code"] == "engine_unavailable"
    resp = await plain
    assert resp.status in (200, 503)
    for _ in range(100):  # the supervisor restarts the dead core
        health = await (await client.get("/health")).json()
        if health["engines_alive"] == 2 and len(client.fakes) == 3:
            break
        await asyncio.sleep(0.05)
    assert health == {"status": "ok", "engines_alive": 2, "engines": 2}
    good = await asyncio.gather(*(client.post("/v1/chat/completions", json=PAYLOAD) for _ in range(4)))
    assert all(r.status == 200 for r in good)
    assert "gateway_engine_restarts 1.0" in await (await client.get("/metrics")).text()


async def test_all_dead_is_503(make_client, tokenizer):
    engine = FakeLLM(tokenizer)
    client = await make_client(engines=[engine], restart=False)
    engine.kill()
    resp = await client.post("/v1/chat/completions", json=PAYLOAD)
    assert resp.status == 503 and resp.headers["Retry-After"]
    assert (await resp.json())["error"]["code"] == "engine_unavailable"
    assert (await client.get("/health")).status == 503
