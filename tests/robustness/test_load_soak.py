"""A soak at 16 concurrent streams of mixed work (chat, tools, json_schema, completions, disconnects):
zero errors, /metrics counters consistent with what the clients saw, every KV block back, and the RSS of
the gateway and its engine core flat after warm-up (printed at start, after warm-up, every minute, at end).

`pytest tests/robustness/test_load_soak.py --soak-seconds 1800 -s` is the long local run."""

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
WARM_UP_FRACTION = 0.2  # RSS is judged from this far into the run (allocator pools, caches, compiled grammars)
WARM_UP_REQUESTS = 2 * NUM_STREAMS  # ... and from this many requests done (a starved run makes few in its time)
RSS_GROWTH = (1.10, 48.0)  # after warm-up RSS may grow at most 10% + 48 MB (a leak of ~1 KB a request in a
# 30-minute run, or of 1% of the KV cache a minute, is more)
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


def route_counts(text: str) -> dict[tuple[str, str], float]:
    """gateway_requests_total by (route, status)."""
    pattern = r'^gateway_requests_total\{route="([^"]+)",status="(\d+)"\} (\S+)$'
    return {(m.group(1), m.group(2)): float(m.group(3)) for m in re.finditer(pattern, text, re.M)}


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


def check_counters(routes_before: dict, routes_after: dict, before: dict, after: dict, seen: collections.Counter) -> None:
    """/metrics agrees with what the clients saw: requests by route and status, generated tokens."""
    answered = {key: n - routes_before.get(key, 0) for key, n in routes_after.items() if n > routes_before.get(key, 0)}
    # A stream the client dropped is a 499 (client closed request), never a 500.
    dropped = {key: n for key, n in answered.items() if key[1] != "200"}
    assert set(dropped) <= {("/v1/chat/completions", "499")}, answered
    assert sum(dropped.values()) <= seen["disconnects"], (answered, seen["disconnects"])
    for path in ("/v1/chat/completions", "/v1/completions"):
        served = answered.get((path, "200"), 0)
        extra = seen["disconnects"] if path == "/v1/chat/completions" else 0
        assert seen[path] <= served <= seen[path] + extra, (path, served, seen[path])
    generated = after["gateway_generation_tokens_total"] - before["gateway_generation_tokens_total"]
    assert seen["completion_tokens"] <= generated <= seen["completion_tokens"] + 64 * seen["disconnects"]


def sample_warm(pids: dict[str, int], warm_at: float, num_done: int, samples: dict[str, dict]) -> None:
    """Takes the after-warm-up RSS sample once both the time and the requests of the warm-up are past;
    called by the watcher and after every request, so a starved watcher cannot miss it."""
    if "warm" not in samples and time.monotonic() >= warm_at and num_done >= WARM_UP_REQUESTS:
        samples["warm"] = {name: rss_mb(pid) for name, pid in pids.items()}


async def watch_rss(pids: dict[str, int], deadline: float, samples: dict[str, dict], warm) -> None:
    """RSS (MB) of each process: at start, after warm-up (`warm()` checks), printed once a minute until `deadline`."""
    samples["start"] = {name: rss_mb(pid) for name, pid in pids.items()}
    started, next_print = time.monotonic(), time.monotonic() + 60
    while (now := time.monotonic()) < deadline:
        warm()
        if now >= next_print:
            next_print += 60
            print(f"soak {now - started:.0f} s: RSS MB " + ", ".join(f"{n} {rss_mb(p):.0f}" for n, p in pids.items()), flush=True)
        await asyncio.sleep(0.5)


async def test_soak_mixed_streams(robust_server, soak_seconds):
    pids = {"gateway": robust_server.proc.pid, **{f"core{i}": p for i, p in enumerate(robust_server.core_pids())}}
    seen: collections.Counter = collections.Counter()
    errors: list[str] = []
    started = time.monotonic()
    deadline = started + soak_seconds
    rss: dict[str, dict] = {}
    warm_at = started + WARM_UP_FRACTION * soak_seconds

    def warm() -> None:
        sample_warm(pids, warm_at, sum(seen[k] for k in KINDS) - len(errors), rss)

    async def stream_worker(http: aiohttp.ClientSession, index: int) -> None:
        rng = random.Random(index)
        while time.monotonic() < deadline and len(errors) < 10:
            kind = rng.choice(list(KINDS))
            seen[kind] += 1
            if (error := await one(http, kind, rng, seen)) is not None:
                errors.append(error)
            warm()

    async with aiohttp.ClientSession(robust_server.url) as http:
        before = await metrics(http)
        async with http.get("/metrics") as resp:
            routes_before = route_counts(await resp.text())
        watcher = asyncio.create_task(watch_rss(pids, deadline, rss, warm))
        await asyncio.gather(*(stream_worker(http, i) for i in range(NUM_STREAMS)))
        await watcher
        after = await settled(http)
        async with http.get("/metrics") as resp:
            routes_after = route_counts(await resp.text())
    rss["end"] = {name: rss_mb(pid) for name, pid in pids.items()}
    if "warm" not in rss:  # fewer than WARM_UP_REQUESTS in the whole run: too few to judge growth by
        print(f"\nsoak: fewer than {WARM_UP_REQUESTS} requests done; RSS growth not judged")
        rss["warm"] = rss["end"]
    elapsed = time.monotonic() - started
    requests = sum(seen[k] for k in KINDS)
    print(f"\nsoak: {elapsed:.0f} s at {NUM_STREAMS} streams, {requests} requests ({requests / elapsed:.1f}/s): "
          + ", ".join(f"{k} {seen[k]}" for k in KINDS) + f"; {seen['completion_tokens']} completion tokens; "
          + f"{len(errors)} errors")  # fmt: skip
    print("RSS MB start / after warm-up / end: "
          + ", ".join(f"{n} {rss['start'][n]:.0f} / {rss['warm'][n]:.0f} / {rss['end'][n]:.0f}" for n in pids))  # fmt: skip
    assert not errors, "\n".join(errors)
    assert after["gateway_num_requests_inflight"] == 0
    assert after["gateway_kv_cache_free_blocks"] == after["gateway_kv_cache_total_blocks"], "KV blocks leaked"
    check_counters(routes_before, routes_after, before, after, seen)
    assert after["gateway_engine_restarts"] == before["gateway_engine_restarts"]
    factor, slack = RSS_GROWTH
    for name in pids:
        assert rss["end"][name] <= factor * rss["warm"][name] + slack, (name, rss)
