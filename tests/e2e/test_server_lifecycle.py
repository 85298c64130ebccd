"""A second server with API keys, the profiler routes and a one-request queue: 401, traces, 429 + Retry-After, Ctrl-C drain."""

from __future__ import annotations

import asyncio
import json
import os

import aiohttp
import pytest

from tests.e2e.conftest import ServerProcess, running_server
from tests.helpers.waiting import frozen, wait_for

CHAT = "/v1/chat/completions"
KEY = {"Authorization": "Bearer sekret"}
GOOD = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4, "temperature": 0}


@pytest.fixture(scope="module")
def trace_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("traces")


@pytest.fixture(scope="module")
def small_server(tiny_model_dir, tmp_path_factory, trace_dir):
    key_file = tmp_path_factory.mktemp("keys") / "keys.txt"
    key_file.write_text("# one per line\nfrom-file-1\nfrom-file-2\n")
    with running_server("--model", str(tiny_model_dir), "--max-num-seqs", "1", "--max-waiting", "0",
                        "--max-model-len", "512", "--embedding-model", "none", "--api-key", "second",
                        "--api-key-file", str(key_file), "--profiler-dir", str(trace_dir),
                        "--engine-heartbeat-timeout", "120", api_key="sekret") as proc:
        yield proc


async def test_api_key(small_server):
    async with aiohttp.ClientSession(small_server.url) as http:
        for headers in ({}, {"Authorization": "Bearer nope"}):
            async with http.post(CHAT, json=GOOD, headers=headers) as resp:
                assert resp.status == 401
                assert (await resp.json())["error"]["code"] == "invalid_api_key"
        async with http.get("/health") as resp:
            assert resp.status == 200
        for key in ("sekret", "second", "from-file-1", "from-file-2"):
            async with http.post(CHAT, json=GOOD, headers={"Authorization": f"Bearer {key}"}) as resp:
                assert resp.status == 200


async def test_profiler_writes_a_chrome_trace(small_server, trace_dir):
    async with aiohttp.ClientSession(small_server.url) as http:
        async with http.post("/start_profile") as resp:
            assert resp.status == 401
        async with http.post("/start_profile", headers=KEY) as resp:
            assert resp.status == 200 and (await resp.json())["status"] == "started"
        async with http.post(CHAT, json=GOOD, headers=KEY) as resp:
            assert resp.status == 200
        async with http.post("/stop_profile", headers=KEY) as resp:
            assert resp.status == 200
            (name,) = (await resp.json())["files"]
        async with http.post("/stop_profile", headers=KEY) as resp:
            assert resp.status == 409
    assert os.path.dirname(name) == str(trace_dir)
    with open(name) as f:
        trace = json.load(f)
    assert trace["traceEvents"] and any(e.get("name", "").startswith("aten::") for e in trace["traceEvents"])


async def test_full_queue_is_429_with_retry_after(small_server):
    """The core is frozen while the first request takes the queue's one place, so the second
    surely finds it full (the tiny model once finished the first before the second came)."""
    async with aiohttp.ClientSession(small_server.url, headers=KEY) as http:

        async def queue_full() -> bool:
            async with http.get("/metrics") as resp:
                return "\ngateway_num_requests_inflight 1.0\n" in await resp.text()

        with frozen(*small_server.core_pids()):
            busy = asyncio.create_task(http.post(CHAT, json={**GOOD, "stream": True}))
            await wait_for(queue_full)
            async with http.post(CHAT, json=GOOD) as resp:
                assert resp.status == 429
                assert resp.headers["Retry-After"] == "1"
                assert (await resp.json())["error"]["code"] == "server_overloaded"
        async with await busy as resp:
            assert resp.status == 200
            assert (await resp.read()).endswith(b"data: [DONE]\n\n")
        async with http.post(CHAT, json=GOOD) as resp:
            assert resp.status == 200


async def test_ctrl_c_drains_in_flight_requests(small_server):
    """Runs last in this module: it stops the server."""
    async with aiohttp.ClientSession(small_server.url, headers=KEY) as http:
        resp = await http.post(CHAT, json={**GOOD, "max_tokens": 40, "ignore_eos": True, "stream": True})
        await resp.content.readuntil(b"\n\n")
        small_server.interrupt()
        body = await resp.read()
    events = [e[len(b"data: "):] for e in body.split(b"\n\n") if e]
    assert events[-1] == b"[DONE]"
    assert json.loads(events[-2])["choices"][0]["finish_reason"] == "length"
    code = await asyncio.to_thread(small_server.proc.wait, 120)
    assert code == 0, small_server.output
    assert "Gateway stopped." in small_server.output
    assert "Traceback" not in small_server.output


def test_bad_model_path_is_a_clean_error():
    proc = ServerProcess("--model", "/nonexistent/model")
    code = proc.proc.wait(timeout=120)
    proc._reader.join(timeout=5)
    assert code == 1
    assert "error: model: no such file or folder" in proc.output
    assert "Traceback" not in proc.output
