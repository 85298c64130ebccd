"""Seeded fuzz of every route against a real server: no 5xx (but JSON 503/429), every 4xx an OpenAI
error body, the server healthy after every batch, no KV block leaked, no engine core restarted.

`pytest tests/robustness --fuzz-seconds 600` runs longer (and prints the per-category figures)."""

from __future__ import annotations

import asyncio
import collections
import time

import aiohttp
import pytest

from tests.robustness.client import healthy, judge, settled
from tests.robustness.mutators import Fuzzer

NUM_WORKERS = 8
CHECK_EVERY = 16  # requests between health checks


async def test_fuzz_every_route(robust_server, fuzz_seconds, request):
    seed = request.config.getoption("--fuzz-seed")
    fuzzer = Fuzzer(seed)
    problems: list[str] = []
    by_category: collections.Counter = collections.Counter()
    by_status: collections.Counter = collections.Counter()
    slowest: list[tuple[float, str]] = []
    refusals: list[str] = []  # the 503/429 answers (allowed when they say why); printed
    deadline = time.monotonic() + fuzz_seconds
    timeout = aiohttp.ClientTimeout(total=None)

    async def worker(http: aiohttp.ClientSession) -> None:
        while time.monotonic() < deadline and len(problems) < 20:
            case = fuzzer.case()
            started = time.monotonic()
            status, problem = await judge(http, case.method, case.path, case.body, case.headers, refusals=refusals)
            slowest.append((time.monotonic() - started, f"{case.path} [{case.category}] -> {status}"))
            for name in case.category.split("+"):
                by_category[name] += 1
            by_status[status] += 1
            if problem:
                problems.append(f"{case.method} {case.path} [{case.category}] body={(case.body or b'')[:200]!r}: {problem}")
            if sum(by_status.values()) % CHECK_EVERY == 0 and (trouble := await healthy(http)) is not None:
                problems.append(f"after {sum(by_status.values())} requests: {trouble}")

    async with aiohttp.ClientSession(robust_server.url, timeout=timeout, auto_decompress=False) as http:
        await asyncio.gather(*(worker(http) for _ in range(NUM_WORKERS)))
        if (trouble := await healthy(http)) is not None:
            problems.append(f"at the end: {trouble}")
        final = await settled(http)
    slowest.sort(reverse=True)
    print("slowest: " + "; ".join(f"{t:.1f} s {what}" for t, what in slowest[:4]))
    total = sum(by_status.values())
    print(f"\nfuzz: {total} requests in {fuzz_seconds:g} s (seed {seed}); statuses {dict(sorted(by_status.items()))}")
    print("categories: " + ", ".join(f"{k} {v}" for k, v in sorted(by_category.items())))
    print("503/429 answers: " + ("; ".join(refusals[:5]) or "none"))
    assert not problems, "\n".join(problems)
    assert final["gateway_num_requests_inflight"] == 0
    assert final["gateway_kv_cache_free_blocks"] == final["gateway_kv_cache_total_blocks"], "KV blocks leaked"
    assert final["gateway_engine_restarts"] == 0, "an engine core died"
    assert by_status[200] > total // 10, "too few fuzzed requests reached the engine to mean much"
    assert "Traceback" not in robust_server.output, robust_server.output[-3000:]

