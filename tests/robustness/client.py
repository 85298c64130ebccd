"""Client helpers for the robustness tests: one request judged by the fuzz rules, /metrics, SSE reading."""

from __future__ import annotations

import asyncio
import json
import re

import aiohttp

CHAT = "/v1/chat/completions"
GOOD = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4, "temperature": 0}
ERROR_KEYS = {"message", "type", "param", "code"}


async def metrics(http: aiohttp.ClientSession) -> dict[str, float]:
    async with http.get("/metrics") as resp:
        text = await resp.text()
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"^(\w+) (\S+)$", text, re.M)}


def is_error_body(raw: bytes) -> bool:
    try:
        error = json.loads(raw)["error"]
    except (ValueError, KeyError, TypeError):
        return False
    return isinstance(error, dict) and set(error) == ERROR_KEYS and bool(error["message"])


def sse_errors(raw: bytes) -> list[dict]:
    """The error objects among a stream's events (a stream that breaks off mid-event counts as one)."""
    errors = []
    for event in raw.split(b"\n\n"):
        if not event.strip() or event == b"data: [DONE]":
            continue
        try:
            data = json.loads(event.removeprefix(b"data: "))
        except ValueError:
            errors.append({"message": f"unparseable event {event[:200]!r}", "code": "broken_stream"})
            continue
        if isinstance(data, dict) and "error" in data:
            errors.append(data["error"])
    return errors


async def judge(http: aiohttp.ClientSession, method: str, path: str, body: bytes | None,
                headers: dict[str, str], timeout_s: float = 60.0,
                refusals: list[str] | None = None) -> tuple[int, str | None]:  # fmt: skip
    """(status, problem or None). A problem: a 5xx other than a JSON 503/429, a 4xx without an OpenAI
    error body, a stream that ends in an internal error, or no answer within `timeout_s`.
    The messages of 503/429 answers are appended to `refusals` when given."""
    try:
        async with asyncio.timeout(timeout_s):
            async with http.request(method, path, data=body, headers=headers) as resp:
                raw = await resp.read()
                status, content_type = resp.status, resp.headers.get("Content-Type", "")
    except TimeoutError:
        return 0, f"no answer within {timeout_s} s"
    except aiohttp.ClientError as exc:
        return 0, f"connection failed: {exc!r}"
    if refusals is not None and status in (503, 429):
        refusals.append(f"{status} {path}: {raw[:200]!r}")
    if status >= 500 and not (status in (503, 429) and is_error_body(raw)):
        return status, f"{status}: {raw[:300]!r}"
    if 400 <= status < 500 and not is_error_body(raw):
        return status, f"{status} without an OpenAI error body: {raw[:300]!r}"
    if status == 200 and content_type.startswith("text/event-stream"):
        bad = [e for e in sse_errors(raw) if e.get("code") in ("internal_error", "broken_stream")]
        if bad:
            return status, f"stream error: {bad[0]}"
    return status, None


async def healthy(http: aiohttp.ClientSession) -> str | None:
    """None when /health is 200 and one valid chat request succeeds; else what failed."""
    async with http.get("/health") as resp:
        if resp.status != 200:
            return f"/health answered {resp.status}: {await resp.text()}"
    status, problem = await judge(http, "POST", CHAT, json.dumps(GOOD).encode(), {"Content-Type": "application/json"})
    if status != 200:
        return f"a valid request answered {status}: {problem}"
    return None


async def settled(http: aiohttp.ClientSession, timeout_s: float = 30.0) -> dict[str, float]:
    """/metrics once nothing is in flight and every KV block is free again (or the timeout passed)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        m = await metrics(http)
        done = m["gateway_num_requests_inflight"] == 0 and m["gateway_kv_cache_free_blocks"] == m["gateway_kv_cache_total_blocks"]
        if done or asyncio.get_running_loop().time() > deadline:
            return m
        await asyncio.sleep(0.1)
