"""A soak at 16 concurrent streams of mixed work (chat, tools, json_schema, completions, disconnects):
zero errors, /metrics counters consistent with what the clients saw, every KV block back, RSS printed.

`pytest tests/robustness/test_soak.py --soak-seconds 1800 -s` is the long local run."""

from __future__ import annotations

import asyncio
import collections
import json
import random
import re
import time
from pathlib import Path

import aiohttp

from tests.robustness.client import metrics, settled, sse_errors

NUM_STREAMS = 16
TOOLS = [{"type": "function", "function": {"name": "weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]  # fmt: skip
SCHEMA = {"type": "json_schema", "json_schema": {"name": "p", "schema": {
    "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}}  # fmt: skip
USER = [{"role": "user", "content": "Tell me something"}]
KINDS = {
    "chat": ("/v1/chat/completions", {"messages": USER, "max_tokens": 8}),
    "tools": ("/v1/chat/completions", {"messages": USER, "max_tokens": 24, "tools": TOOLS, "tool_choice": "required"}),
    "json_schema": ("/v1/chat/completions", {"messages": USER, "max_tokens": 16, "response_format": SCHEMA}),
    "completions": ("/v1/completions", {"prompt": "Once upon a time", "max_tokens": 8}),
    "disconnect": ("/v1/chat/completions", {"messages": USER, "max_tokens": 64, "ignore_eos": True, "stream": True}),
}


def rss_mb(pid: int) -> float:
    match = re.search(r"^VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.M)
    return int(match.group(1)) / 1024 if match else 0.0


def route_counts(text: str, status: str = "200") -> dict[str, float]:
    pattern = rf'^gateway_requests_total\{{route="([^"]+)",status="{status}"\}} (\S+)$'
    return {m.group(1): float(m.group(2)) for m in re.finditer(pattern, text, re.M)}


async def one(http: aiohttp.ClientSession, kind: str, rng: random.Random, seen: collections.Counter) -> str | None:
    """Runs one request of `kind`; adds its route and completion tokens to `seen`; returns an error or None."""
    path, body = KINDS[kind]
    body = dict(body)
    if kind != "disconnect" and rng.random() < 0.5:
        body.update(stream=True, stream_options={"include_usage": True})
    async with http.post(path, json=body) as resp:
        if resp.status != 200:
            return f"{kind}: {resp.status} {await resp.text()}"
        if kind == "disconnect":
            await resp.content.readuntil(b"\n\n")
            resp.close()
            seen["disconnects"] += 1
            return None
        raw = await resp.read()
    if body.get("stream"):
        if errors := sse_errors(raw):
            return f"{kind}: stream error {errors[0]}"
        usage = json.loads(raw.split(b"\n\n")[-3].removeprefix(b"data: "))["usage"]
    else:
        usage = json.loads(raw)["usage"]
    seen[path] += 1
    seen["completion_tokens"] += usage["completion_tokens"]
    return None


async def test_soak_mixed_streams(robust_server, soak_seconds):
    pids = {"gateway": robust_server.proc.pid, **{f"core{i}": p for i, p in enumerate(robust_server.core_pids())}}
    rss_start = {name: rss_mb(pid) for name, pid in pids.items()}
    seen: collections.Counter = collections.Counter()
    errors: list[str] = []
    deadline = time.monotonic() + soak_seconds

    async def stream_worker(http: aiohttp.ClientSession, index: int) -> None:
        rng = random.Random(index)
        while time.monotonic() < deadline and len(errors) < 10:
            kind = rng.choice(list(KINDS))
            seen[kind] += 1
            if (error := await one(http, kind, rng, seen)) is not None:
                errors.append(error)

    async with aiohttp.ClientSession(robust_server.url) as http:
        before = await metrics(http)
        async with http.get("/metrics") as resp:
            routes_before = route_counts(await resp.text())
        await asyncio.gather(*(stream_worker(http, i) for i in range(NUM_STREAMS)))
        after = await settled(http)
        async with http.get("/metrics") as resp:
            routes_after = route_counts(await resp.text())
    rss_end = {name: rss_mb(pid) for name, pid in pids.items()}
    print(f"\nsoak: {soak_seconds:g} s at {NUM_STREAMS} streams: " + ", ".join(f"{k} {seen[k]}" for k in KINDS))
    print("RSS MB start -> end: " + ", ".join(f"{n} {rss_start[n]:.0f} -> {rss_end[n]:.0f}" for n in pids))
    assert not errors, "\n".join(errors)
    assert after["gateway_num_requests_inflight"] == 0
    assert after["gateway_kv_cache_free_blocks"] == after["gateway_kv_cache_total_blocks"], "KV blocks leaked"
    for path in ("/v1/chat/completions", "/v1/completions"):
        served = routes_after.get(path, 0) - routes_before.get(path, 0)
        extra = seen["disconnects"] if path == "/v1/chat/completions" else 0
        assert seen[path] <= served <= seen[path] + extra, (path, served, seen[path])
    generated = after["gateway_generation_tokens_total"] - before["gateway_generation_tokens_total"]
    assert seen["completion_tokens"] <= generated <= seen["completion_tokens"] + 64 * seen["disconnects"]
    assert after["gateway_engine_restarts"] == before["gateway_engine_restarts"]
