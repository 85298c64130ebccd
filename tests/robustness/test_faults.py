"""Faults and limits on a real server: a request the KV cache cannot hold is a 400, a hung (SIGSTOPped)
engine core is found by its missing heartbeat and replaced, SIGTERM drains and exits 0, and a new
server binds the same port at once. The tests run in file order: the last one stops the server."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time

import aiohttp
import pytest

from tests.e2e.conftest import ServerProcess, running_server
from tests.helpers.waiting import frozen, wait_for
from tests.robustness.client import CHAT, GOOD, healthy, is_error_body, metrics, settled, sse_errors

# 32 blocks of 16 = 512 tokens of KV cache under a 1,024-token context.
ARGS = ("--max-model-len", "1024", "--num-kv-blocks", "32", "--block-size", "16", "--max-num-seqs", "8",
        "--embedding-model", "none", "--engine-heartbeat-timeout", "2", "--shutdown-timeout", "30")  # fmt: skip
# The SIGTERM test freezes the core while it lines up its streams: no heartbeat kill meanwhile.
DRAIN_ARGS = (*ARGS[:-4], "--engine-heartbeat-timeout", "120", "--shutdown-timeout", "120")
LONG = {**GOOD, "max_tokens": 200, "ignore_eos": True, "stream": True}


@pytest.fixture(scope="module")
def fault_server(robust_model_dir):
    with running_server("--model", str(robust_model_dir), *ARGS) as proc:
        yield proc


@pytest.fixture
async def http(fault_server):
    async with aiohttp.ClientSession(fault_server.url) as session:
        yield session


async def test_a_prompt_the_kv_cache_cannot_hold_is_400_at_admission(http):
    """The engine caps the context at what its KV cache holds (512 tokens here), so a longer request is
    refused at admission instead of being preempted forever; the pool checks the cache size too."""
    for body in ({"prompt": [5] * 700, "max_tokens": 4}, {"prompt": [5] * 400, "max_tokens": 200}):
        async with http.post("/v1/completions", json=body) as resp:
            assert resp.status == 400
            error = (await resp.json())["error"]
        assert error["param"] in ("prompt", "max_tokens") and "512" in error["message"], error
    assert await healthy(http) is None


async def test_memory_pressure_finishes_every_stream_by_preemption(http):
    """32 streams needing about 2,500 tokens of KV against a 512-token cache: all finish, blocks come back."""
    body = {**LONG, "max_tokens": 64}
    before = await settled(http)

    async def one() -> bytes:
        async with http.post(CHAT, json=body) as resp:
            assert resp.status == 200
            return await resp.read()

    bodies = await asyncio.wait_for(asyncio.gather(*(one() for _ in range(32))), 240)
    for raw in bodies:
        assert raw.endswith(b"data: [DONE]\n\n") and not sse_errors(raw), raw[-300:]
        assert b'"finish_reason":"length"' in raw
    after = await settled(http)
    assert after["gateway_kv_cache_free_blocks"] == after["gateway_kv_cache_total_blocks"]
    assert after["gateway_num_preemptions"] > before["gateway_num_preemptions"]


async def test_a_stopped_core_is_detected_by_its_heartbeat_and_replaced(http, fault_server):
    """The core is stopped before the requests reach it, so neither can finish first however fast
    the machine is; both are refused naming the heartbeat, and a new core takes over."""
    (pid,) = fault_server.core_pids()

    async def post() -> tuple[int, bytes]:
        async with http.post(CHAT, json=LONG) as resp:
            return resp.status, await resp.read()

    async def routed() -> bool:
        return (await metrics(http))["gateway_num_requests_inflight"] == 2

    os.kill(pid, signal.SIGSTOP)
    try:
        posts = [asyncio.create_task(post()) for _ in range(2)]
        await wait_for(routed)
        stopped = time.monotonic()
        answers = await asyncio.wait_for(asyncio.gather(*posts), 120)
        detected = time.monotonic() - stopped
    finally:
        if pid in fault_server.core_pids():
            os.kill(pid, signal.SIGCONT)
    # 2 s of silence and a supervisor tick; the slack is for a loaded machine, not a speed claim
    assert detected < 60, f"the hang was noticed after {detected:.1f} s"
    for status, body in answers:
        assert status == 503 and is_error_body(body), body[:500]
        assert "heartbeat" in json.loads(body)["error"]["message"], body[:500]

    async def replaced() -> bool:
        async with http.get("/health") as resp:
            return resp.status == 200

    await wait_for(replaced, timeout_s=240, interval_s=0.2)
    assert await healthy(http) is None
    m = await settled(http)
    assert m["gateway_engine_restarts"] == 1
    assert m["gateway_kv_cache_free_blocks"] == m["gateway_kv_cache_total_blocks"]
    assert pid not in fault_server.core_pids()


async def test_sigterm_finishes_streams_refuses_new_ones_exits_0_and_the_port_is_free(fault_server, robust_model_dir):
    """SIGTERM while two streams are lined up in a frozen core (a server of its own, whose heartbeat
    waits for that): the server must still be draining when the probe comes, whatever the machine's
    speed (the tiny model once finished both streams before the first probe). New requests get a
    503, the two streams end normally once the core runs, the server exits 0 and a new one binds
    the same port at once."""
    fault_server.stop()  # this module's last test: its port is reused for the server that drains
    server = ServerProcess("--model", str(robust_model_dir), *DRAIN_ARGS)
    try:
        await asyncio.to_thread(server.wait_ready)
        async with aiohttp.ClientSession(server.url) as http:

            async def stream() -> bytes:
                async with http.post(CHAT, json={**LONG, "max_tokens": 16}) as resp:
                    assert resp.status == 200
                    return await resp.read()

            async def routed() -> bool:
                return (await metrics(http))["gateway_num_requests_inflight"] == 2

            with frozen(*server.core_pids()):
                streams = [asyncio.create_task(stream()) for _ in range(2)]
                await wait_for(routed)
                server.proc.send_signal(signal.SIGTERM)
                refused = await _first_refusal(server.url)
            bodies = await asyncio.gather(*streams)
        assert refused[0] == 503 and is_error_body(refused[1])
        assert json.loads(refused[1])["error"]["code"] == "shutting_down"
        for body in bodies:
            assert body.endswith(b"data: [DONE]\n\n") and not sse_errors(body), body[-300:]
        assert await asyncio.to_thread(server.proc.wait, 120) == 0, server.output[-2000:]
        assert "Traceback" not in server.output
    finally:
        server.stop()
    again = ServerProcess("--model", str(robust_model_dir), *ARGS, port=server.port)
    try:
        again.wait_ready()
        async with aiohttp.ClientSession(again.url) as session:
            assert await healthy(session) is None
    finally:
        again.stop()


async def _first_refusal(url: str) -> tuple[int, bytes]:
    """(status, body) of the first `GET /v1/models` the draining server refuses. The route needs no
    engine core (the test has it frozen), so an answer before the signal is handled is a quick 200
    and the next poll follows; the server cannot stop listening meanwhile, as streams are in flight."""
    async with aiohttp.ClientSession(url) as fresh:

        async def refusal() -> tuple[int, bytes] | None:
            async with fresh.get("/v1/models") as resp:
                answer = (resp.status, await resp.read())
            return answer if answer[0] != 200 else None

        return await wait_for(refusal, interval_s=0.01)
