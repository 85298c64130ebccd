"""The edge refuses every odd request with a 4xx OpenAI error body: numbers that do not fit, broken
encodings, absurd nesting, oversized URLs and headers, wrong methods, slow bodies, too many connections.

The app runs under gateway.http_server's runner (the one `python -m gateway serve` uses) on a
fake engine, so aiohttp's protocol-level refusals are checked as a client sees them."""

from __future__ import annotations

import asyncio
import json
import zlib

import aiohttp
import pytest

from gateway.app import create_app
from gateway.engine_pool import EnginePool
from gateway.http_server import GatewayRunner, HttpLimits
from gateway.state import GatewaySettings
from tests.e2e.conftest import free_port
from tests.gateway.fake_engine import FakeLLM
from tests.helpers.waiting import wait_for, wait_until

CHAT = "/v1/chat/completions"
MESSAGES = [{"role": "user", "content": "Hi"}]
GOOD = {"messages": MESSAGES, "max_tokens": 3}
BODY_ROUTES = [CHAT, "/v1/completions", "/tokenize", "/detokenize", "/v1/embeddings"]


@pytest.fixture(scope="session")
def tokenizer(tmp_path_factory):
    from transformers import AutoTokenizer

    from tests.helpers.tiny_model import make_tiny_model

    return AutoTokenizer.from_pretrained(str(make_tiny_model(tmp_path_factory.mktemp("edge-tiny"), "llama")))


@pytest.fixture
async def url(tokenizer):
    """A gateway on the fake engine behind GatewayRunner: 2 s body timeout, at most 8 connections, idle ones
    closed after 1.5 s."""
    fake = FakeLLM(tokenizer)

    async def start_pool() -> EnginePool:
        return EnginePool([fake], None, max_queued=64)

    app = create_app(GatewaySettings(body_read_timeout_s=2.0), start_pool)
    runner = GatewayRunner(app, HttpLimits(max_connections=8, idle_timeout_s=1.5), shutdown_timeout=1.0)
    await runner.setup()
    port = free_port()
    site = aiohttp.web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def check_error(status: int, body: bytes, expected: int, param: str | None = "any") -> dict:
    assert status == expected, body[:500]
    error = json.loads(body)["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"]
    if param != "any":
        assert error["param"] == param, error
    return error


async def request(url: str, method: str, path: str, **kwargs) -> tuple[int, bytes]:
    async with aiohttp.ClientSession(url, auto_decompress=False) as http:
        async with http.request(method, path, **kwargs) as resp:
            return resp.status, await resp.read()


async def good_after(url: str) -> None:
    status, body = await request(url, "POST", CHAT, json=GOOD)
    assert status == 200, body


BIG = 2**63  # 9223372036854775808: one past int64
NUMBERS = [
    ("top_k", BIG), ("top_k", 2**64), ("top_k", 10**30), ("top_k", -2),
    ("max_tokens", BIG), ("max_tokens", 2**64), ("max_tokens", -BIG - 5), ("max_completion_tokens", 2**64),
    ("seed", BIG), ("seed", -BIG - 1), ("n", BIG), ("n", 2**64), ("min_tokens", BIG), ("min_tokens", -1),
    ("top_logprobs", BIG), ("temperature", 1e308), ("temperature", -1e308), ("top_p", 1e300),
    ("presence_penalty", 1e300), ("frequency_penalty", -1e300), ("repetition_penalty", 1e300),
    ("min_p", 2.0),
]  # fmt: skip


@pytest.mark.parametrize(("field", "value"), NUMBERS)
async def test_out_of_range_numbers_are_400_naming_the_field(url, field, value):
    body = {**GOOD, field: value, **({"logprobs": True} if field == "top_logprobs" else {})}
    status, raw = await request(url, "POST", CHAT, data=json.dumps(body))
    check_error(status, raw, 400, field)
    completion = {"prompt": "Hi", "max_tokens": 3, field: value}
    if field in ("top_logprobs", "max_completion_tokens"):
        return
    status, raw = await request(url, "POST", "/v1/completions", data=json.dumps(completion))
    check_error(status, raw, 400, field)
    await good_after(url)


@pytest.mark.parametrize("bias", [{str(BIG): 1}, {str(2**64): 1}, {"-1": 1}, {"5": 1e300}, {"5": -1e308}, {"5": BIG}])
async def test_logit_bias_keys_and_values_are_range_checked(url, bias):
    status, raw = await request(url, "POST", CHAT, data=json.dumps({**GOOD, "logit_bias": bias}))
    check_error(status, raw, 400, "logit_bias")


async def test_other_integer_fields(url):
    status, raw = await request(url, "POST", "/v1/completions", json={"prompt": "Hi", "logprobs": BIG})
    check_error(status, raw, 400, "logprobs")
    for tokens in ([BIG], [2**64], [-1]):
        status, raw = await request(url, "POST", "/detokenize", data=json.dumps({"tokens": tokens}))
        check_error(status, raw, 400, "tokens")
    for prompt in ([BIG], [[1, 2**64]], [-5]):
        status, raw = await request(url, "POST", "/v1/completions", data=json.dumps({"prompt": prompt}))
        assert status == 400, raw
    status, raw = await request(url, "POST", CHAT, data=json.dumps({**GOOD, "stop_token_ids": [2**64]}))
    check_error(status, raw, 400, "stop_token_ids")
    await good_after(url)


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "x-unknown"])
@pytest.mark.parametrize("path", BODY_ROUTES)
async def test_a_body_that_is_not_what_content_encoding_says_is_400(url, path, encoding):
    headers = {"Content-Encoding": encoding, "Content-Type": "application/json"}
    status, raw = await request(url, "POST", path, data=json.dumps(GOOD).encode(), headers=headers)
    assert 400 <= status < 500, raw
    check_error(status, raw, status)
    await good_after(url)


async def test_a_real_gzip_body_is_read(url):
    compressor = zlib.compressobj(wbits=31)
    body = compressor.compress(json.dumps(GOOD).encode()) + compressor.flush()
    status, raw = await request(url, "POST", CHAT, data=body, headers={"Content-Encoding": "gzip"})
    assert status == 200, raw


@pytest.mark.parametrize("path", BODY_ROUTES)
@pytest.mark.parametrize("opener", ["[", '{"a":'])
async def test_a_body_nested_10000_deep_is_400(url, path, opener):
    closer = "]" if opener == "[" else "}"
    nested = opener * 10_000 + "1" + closer * 10_000
    for body in (nested, '{"messages": ' + nested + "}", '{"prompt": "x", "tokens": [1], "input": "x", "x": ' + nested + "}"):
        status, raw = await request(url, "POST", path, data=body)
        check_error(status, raw, 400)
    await good_after(url)


async def raw_exchange(url: str, payload: bytes) -> tuple[int, bytes]:
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(payload)
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), 120)  # a safety net: the server's 2 s decide
    finally:
        writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


async def test_url_and_header_limits_are_414_and_431_with_json(url):
    status, body = await raw_exchange(url, b"GET /v1/models?" + b"a" * 16384 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert check_error(status, body, 414)["code"] == "uri_too_long"
    big = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 65536 + b"\r\n\r\n"
    status, body = await raw_exchange(url, big)
    assert check_error(status, body, 431)["code"] == "header_too_large"
    many = b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-H%d: 1\r\n" % i for i in range(1000)) + b"\r\n"
    status, body = await raw_exchange(url, many)
    assert check_error(status, body, 431)["code"] == "header_too_large"
    status, body = await raw_exchange(url, b"\x16\x03\x01 garbage\r\n\r\n")
    check_error(status, body, 400)
    await good_after(url)


@pytest.mark.parametrize(("method", "path"), [("GET", CHAT), ("PUT", "/v1/completions"), ("DELETE", "/health"),
                                              ("POST", "/v1/models"), ("PATCH", "/tokenize")])  # fmt: skip
async def test_wrong_method_is_405_with_json(url, method, path):
    status, raw = await request(url, method, path)
    assert check_error(status, raw, 405)["code"] == "method_not_allowed"


async def test_a_body_that_trickles_is_408(url):
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(f"POST {CHAT} HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{{".encode())
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), 120)  # a safety net: the server's 2 s decide
    finally:
        writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    assert check_error(int(head.split()[1]), body, 408)["code"] == "request_timeout"
    await good_after(url)


async def test_connections_over_the_limit_are_503_and_others_still_served(url):
    host, port = url.removeprefix("http://").split(":")
    idle = [await asyncio.open_connection(host, int(port)) for _ in range(8)]
    try:
        status, body = await raw_exchange(url, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert check_error(status, body, 503)["code"] == "too_many_connections"
    finally:
        for _, writer in idle:
            writer.close()

    async def served() -> bool:  # once the server has seen the closes, a new connection gets in
        return (await request(url, "GET", "/health"))[0] == 200

    await wait_for(served)
    await good_after(url)


async def test_idle_connections_are_closed_and_free_the_limit(url):
    """Found by the protocol-abuse test: aiohttp keeps a connection that never sends a request for an hour,
    so idle clients (or headers sent a byte at a time) could hold --max-connections and lock everyone out."""
    host, port = url.removeprefix("http://").split(":")
    idle = [await asyncio.open_connection(host, int(port)) for _ in range(8)]
    try:
        for _, writer in idle[::2]:  # half a request head, then a byte now and then
            writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        await asyncio.sleep(1.0)
        for _, writer in idle[::2]:
            writer.write(b"a")
        for reader, _ in idle:
            assert await asyncio.wait_for(reader.read(), 120) == b""  # closed by the server (a safety net)
    finally:
        for _, writer in idle:
            writer.close()
    await good_after(url)


@pytest.mark.parametrize("constraint", [{"response_format": {"type": "json_object"}},
                                        {"structured_outputs": {"choice": ["yes", "no"]}}])  # fmt: skip
async def test_min_tokens_yields_to_the_grammar_and_ignore_eos_with_one_is_400(url, constraint):
    """Found by the fuzz: the grammar allowed only EOS, min_tokens/ignore_eos forbade it, the engine failed
    the request and the client saw a 503. Now min_tokens holds the output open only while the grammar
    allows more than a stop token (a 200 whose output the grammar ended), and ignore_eos with a
    constraint is refused at admission, naming the field."""
    for path, base in ((CHAT, GOOD), ("/v1/completions", {"prompt": "Hi", "max_tokens": 3})):
        status, raw = await request(url, "POST", path, json={**base, **constraint, "max_tokens": 40, "min_tokens": 30})
        assert status == 200, raw[:300]  # (the output itself: tests/engine/test_structured.py)
        status, raw = await request(url, "POST", path, json={**base, **constraint, "ignore_eos": True})
        check_error(status, raw, 400, "ignore_eos")


async def test_a_request_larger_than_the_whole_queue_is_400_not_429(url):
    """Found by the fuzz: 2,000 prompts x n=1 against a 64-place queue got a 429 whose retry could never pass."""
    status, raw = await request(url, "POST", "/v1/completions", json={"prompt": ["a"] * 2000, "max_tokens": 1})
    check_error(status, raw, 400, "n")
    status, raw = await request(url, "POST", "/v1/completions", json={"prompt": ["a"] * 8, "max_tokens": 1, "n": 9})
    check_error(status, raw, 400, "n")
    await good_after(url)


async def test_a_stream_the_client_drops_is_counted_as_499_not_500(tokenizer):
    """Found by the soak's /metrics check: the runner cancels the handler of a dropped stream, and the
    metrics middleware counted that as a 500; it is a 499 (client closed request)."""
    fake = FakeLLM(tokenizer, step_delay_s=0.2)

    async def start_pool() -> EnginePool:
        return EnginePool([fake], None, max_queued=64)

    runner = GatewayRunner(create_app(GatewaySettings(), start_pool), HttpLimits(), shutdown_timeout=1.0)
    await runner.setup()
    port = free_port()
    await aiohttp.web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        async with aiohttp.ClientSession(f"http://127.0.0.1:{port}") as http:
            resp = await http.post(CHAT, json={**GOOD, "max_tokens": 50, "stream": True})
            await resp.content.readuntil(b"\n\n")
            resp.close()

            async def counted() -> dict[str, str]:
                async with http.get("/metrics") as m:
                    text = await m.text()
                return {status: line for status in ("499", "500") for line in text.splitlines()
                        if line.startswith("gateway_requests_total") and f'status="{status}"' in line}  # fmt: skip

            assert set(await wait_for(counted)) == {"499"}
            await wait_until(lambda: fake.num_free_blocks == fake.num_total_blocks)
            assert fake.num_free_blocks == fake.num_total_blocks
    finally:
        await runner.cleanup()
