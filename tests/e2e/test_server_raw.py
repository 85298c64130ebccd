"""The real server over raw aiohttp: SSE framing, every error case, disconnects, a killed engine core."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal

import aiohttp
import pytest

from tests.helpers.waiting import frozen, wait_for

CHAT = "/v1/chat/completions"
GOOD = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4, "temperature": 0}


async def read_sse(resp) -> list:
    events, buffer = [], b""
    async for data in resp.content.iter_any():
        buffer += data
        while b"\n\n" in buffer:
            raw, buffer = buffer.split(b"\n\n", 1)
            assert raw.startswith(b"data: ")
            payload = raw[6:]
            events.append("[DONE]" if payload == b"[DONE]" else json.loads(payload))
    return events


async def metric(http, name: str) -> float:
    async with http.get("/metrics") as resp:
        text = await resp.text()
    match = re.search(rf"^{name} (\S+)$", text, re.M)
    assert match, name
    return float(match.group(1))


async def expect_error(http, method: str, path: str, status: int, **kwargs) -> dict:
    async with http.request(method, path, **kwargs) as resp:
        assert resp.status == status, await resp.text()
        error = (await resp.json())["error"]
    assert set(error) == {"message", "type", "param", "code"}
    async with http.post(CHAT, json=GOOD) as resp:  # the next good request still succeeds
        assert resp.status == 200
    return error


@pytest.fixture
async def http(server):
    async with aiohttp.ClientSession(server.url) as session:
        yield session


async def test_sse_framing(http):
    async with http.post(CHAT, json={**GOOD, "stream": True, "n": 2}) as resp:
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        events = await read_sse(resp)
    assert events[-1] == "[DONE]"
    for index in (0, 1):
        mine = [e["choices"][0] for e in events[:-1] if e["choices"][0]["index"] == index]
        assert mine[0]["delta"] == {"role": "assistant", "content": ""}
        assert [c["finish_reason"] for c in mine if c["finish_reason"]] in (["length"], ["stop"])


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"{oops", 400),
        (json.dumps({"messages": "x"}).encode(), 400),
        (json.dumps({"messages": [{"role": "user", "content": "x"}], "n": "2"}).encode(), 400),
        (json.dumps({"max_tokens": 3}).encode(), 400),
        (json.dumps({**GOOD, "temperature": -3}).encode(), 400),
        (json.dumps({**GOOD, "max_tokens": 10**6}).encode(), 400),
        (json.dumps({**GOOD, "model": "gpt-4o"}).encode(), 404),
        (json.dumps({**GOOD, "unknown_field": 1}).encode(), 200),
    ],
)
async def test_bad_requests_then_a_good_one(http, body, status):
    if status == 200:
        async with http.post(CHAT, data=body) as resp:
            assert resp.status == 200
        return
    await expect_error(http, "POST", CHAT, status, data=body)


async def test_route_and_size_errors(http):
    assert (await expect_error(http, "GET", "/v1/nope", 404))["code"] == "not_found"
    big = b'{"messages": [{"role": "user", "content": "' + b"x" * (9 * 1024 * 1024) + b'"}]}'
    assert (await expect_error(http, "POST", CHAT, 413, data=big))["code"] == "request_too_large"
    assert (await expect_error(http, "POST", "/v1/embeddings", 400, json={"input": [[]]}))["param"] == "input"
    for path in ("/start_profile", "/stop_profile"):  # no --profiler-dir: no profiler routes
        assert (await expect_error(http, "POST", path, 404))["code"] == "not_found"


async def test_openapi_describes_every_route(http):
    from openapi_spec_validator import validate

    async with http.get("/openapi.json") as resp:
        spec = await resp.json()
    validate(spec)
    assert {"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/models", "/v1/models/{model_id}",
            "/health", "/metrics", "/tokenize", "/detokenize", "/openapi.json",
            "/v1/responses", "/v1/responses/{response_id}", "/v1/responses/{response_id}/input_items",
            "/v1/messages", "/v1/messages/count_tokens",
            "/", "/playground", "/static/{name}"} == set(spec["paths"])  # fmt: skip


async def test_disconnect_frees_blocks(http, server):
    """The client drops a stream while the cores are frozen, so the request is surely unfinished
    when the gateway sees the disconnect (however fast the machine decodes); its blocks come back."""
    total = await metric(http, "gateway_kv_cache_total_blocks")
    payload = {**GOOD, "max_tokens": 400, "ignore_eos": True, "stream": True}
    resp = await http.post(CHAT, json=payload)
    for _ in range(3):
        await resp.content.readuntil(b"\n\n")
    with frozen(*server.core_pids()):
        assert await metric(http, "gateway_num_requests_inflight") == 1
        resp.close()

        async def released() -> bool:
            return await metric(http, "gateway_num_requests_inflight") == 0

        await wait_for(released)

    async def blocks_back() -> bool:
        return await metric(http, "gateway_kv_cache_free_blocks") == total

    await wait_for(blocks_back)


async def test_killing_one_core_loses_no_request_that_had_not_started(http, server):
    """Both cores are frozen (SIGSTOP) while four requests with different first KV blocks are
    routed, so routing alternates (no prefix to follow, least loaded: each core holds two) and none
    can start, let alone finish, before the kill: no token count or speed decides the outcome. The
    killed core's two requests had sent nothing, so the gateway moves them to the other core, and
    all four stream to the end."""
    pids = server.core_pids()
    assert len(pids) == 2
    payload = {**GOOD, "max_tokens": 30, "ignore_eos": True, "stream": True}

    async def post(i: int) -> tuple[int, list | dict]:
        body = {**payload, "messages": [{"role": "user", "content": f"Hi {i}"}]}
        async with http.post(CHAT, json=body) as resp:
            if resp.status != 200:
                return resp.status, await resp.json()
            return resp.status, await read_sse(resp)

    async def routed() -> bool:
        return await metric(http, "gateway_num_requests_inflight") == 4

    with frozen(*pids):
        posts = [asyncio.create_task(post(i)) for i in range(4)]
        await wait_for(routed)  # each sits in its core's socket, unanswered
        os.kill(pids[0], signal.SIGKILL)
    results = await asyncio.gather(*posts)
    finished = [events for status, events in results if status == 200]
    assert len(finished) == 4, results
    assert await metric(http, "gateway_failovers") == 2
    for events in finished:
        assert events[-1] == "[DONE]" and events[-2]["choices"][0]["finish_reason"] == "length"
    async with http.post(CHAT, json=GOOD) as resp:  # the surviving core keeps serving
        assert resp.status == 200

    async def both_alive() -> bool:  # and the dead one comes back
        async with http.get("/health") as resp:
            return (await resp.json())["engines_alive"] == 2

    await wait_for(both_alive, timeout_s=240, interval_s=0.2)
    assert await metric(http, "gateway_engines_alive") == 2
    assert await metric(http, "gateway_engine_restarts") == 1
    assert len(server.core_pids()) == 2


async def test_a_killed_encoder_is_restarted(http, server):
    (pid,) = server.encoder_pids()
    os.kill(pid, signal.SIGKILL)
    for _ in range(600):
        async with http.get("/health") as resp:
            if (await resp.json()).get("embedding") == "ok" and server.encoder_pids() not in ([], [pid]):
                break
        await asyncio.sleep(0.2)
    async with http.post("/v1/embeddings", json={"input": "hello world"}) as resp:
        assert resp.status == 200
        assert len((await resp.json())["data"][0]["embedding"]) == 32
