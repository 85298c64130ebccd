"""--request-timeout: a generation running past it ends (408, or an error event mid-stream) and frees its blocks."""

from __future__ import annotations

import asyncio
import json

from gateway.engine_pool import PoolLimits
from tests.helpers.waiting import wait_until

CHAT = "/v1/chat/completions"
BODY = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 50}


async def test_a_request_past_the_timeout_is_ended_and_its_blocks_freed(make_client):
    client = await make_client(pool_limits=PoolLimits(request_timeout_s=0.5), step_delay_s=0.2)
    fake = client.fakes[0]
    resp = await client.post(CHAT, json=BODY)
    assert resp.status == 408
    error = (await resp.json())["error"]
    assert error["code"] == "request_timeout" and "--request-timeout" in error["message"]
    resp = await client.post(CHAT, json={**BODY, "stream": True})
    assert resp.status == 200
    events = [json.loads(e[6:]) for e in (await resp.read()).decode().split("\n\n") if e.startswith("data: {")]
    assert events[-1]["error"]["code"] == "request_timeout"
    await wait_until(lambda: fake.num_free_blocks == fake.num_total_blocks and fake.num_inflight == 0)
    assert fake.num_free_blocks == fake.num_total_blocks and fake.num_inflight == 0
    assert len(fake.aborted) == 2


async def test_a_quick_request_is_untouched(make_client):
    client = await make_client(pool_limits=PoolLimits(request_timeout_s=5.0))
    resp = await client.post(CHAT, json=BODY)
    assert resp.status == 200
