"""Protocol abuse under load on a real server: hundreds of idle (and half-sent) connections up to its
`--max-connections`, hundreds of streams dropped mid-way, bodies sent a byte at a time. Connections over
the limit get a JSON 503 at once, the slow bodies a 408, and afterwards every KV block is back and
/health ok. Meanwhile one well-behaved stream is timed in a process of its own
(tests/robustness/itl_probe.py), in three kinds of window taking turns:

- unloaded: nothing else;
- protocol: the idle and half-sent connections and the slow bodies, which ask the engine for no work:
  the stream's inter-token latency stays within 2x of unloaded;
- loaded: the same plus 8 clients starting streams and dropping them. Those streams are real work (a
  prefill and a few tokens each, batched with the probe), so the probe's latency there is a batch's,
  printed, not judged against 2x; what is judged is that their aborts leave nothing behind: after each
  loaded window the server's in-flight count falls back to the probe's one request (an event waited
  for, not a timing: the probe's sub-millisecond ITL moved 2x between quiet windows on a CI runner).

Medians of several windows are compared, so a spike from elsewhere on the machine does not decide."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import multiprocessing
import time

import aiohttp
import pytest

from tests.e2e.conftest import running_server
from tests.robustness.client import CHAT, healthy, is_error_body, metrics, settled
from tests.robustness.itl_probe import median, probe_main, window_itl

MAX_CONNECTIONS = 256
IDLE = 216  # held open in each abuse window; with the droppers, the probe, the slow bodies and the droppers'
#            connections still closing (16 spare: a slow machine notices a dropped connection late), under the limit
FILL = 232  # held open at the end: about 20 more fill the limit, the rest of OVER must be refused
DROPPERS = 8  # concurrent clients that start a stream and drop it
OVER = 48  # extra connections at the end: about 20 fill the limit, the rest must be refused
PAIRS = 6  # unloaded and loaded windows, alternating while the probe streams
WINDOW_S = 2.0
NOISE = 3.0  # unloaded windows further apart than this factor: the machine is too busy to judge 2x
SETTLE_S = 0.4  # left out at the start of each window: the load coming on or going off
ARGS = ("--max-model-len", "512", "--num-kv-blocks", "128", "--max-num-seqs", "16", "--embedding-model", "none",
        "--served-model-name", "tiny", "--max-connections", str(MAX_CONNECTIONS), "--body-read-timeout", "2")  # fmt: skip
DROP = {"messages": [{"role": "user", "content": "Tell me a story"}], "max_tokens": 200, "ignore_eos": True, "stream": True}


@pytest.fixture(scope="module")
def abuse_server(robust_model_dir):
    with running_server("--model", str(robust_model_dir), *ARGS) as proc:
        yield proc


Conn = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def open_idle(host: str, port: int, count: int) -> list[Conn]:
    """`count` connections that send nothing, or (every other one) half a request head and then nothing."""
    conns = []
    for i in range(count):
        reader, writer = await asyncio.open_connection(host, port)
        if i % 2:
            writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: appl")
        conns.append((reader, writer))
    return conns


async def release(conns: list[Conn]) -> None:
    """Closes the connections and returns once the server has closed its side of each (it answers
    our EOF with its own): it no longer counts them against --max-connections. Closing alone let
    the next window's connections meet the old ones still counted, on a slow machine."""

    async def one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            writer.write_eof()
            await asyncio.wait_for(reader.read(), 120)  # a safety net: the server's EOF decides
        writer.close()

    await asyncio.gather(*(one(*conn) for conn in conns))


async def drop_streams(url: str, stop: asyncio.Event, counts: collections.Counter) -> None:
    """One dropper: starts a stream, reads a few events, closes the connection; again until `stop`."""
    async with aiohttp.ClientSession(url, connector=aiohttp.TCPConnector(force_close=True)) as http:
        while not stop.is_set():
            async with http.post(CHAT, json=DROP) as resp:
                if resp.status != 200:
                    counts[f"dropper got {resp.status}"] += 1
                    continue
                for _ in range(1 + counts["dropped"] % 4):
                    await resp.content.readuntil(b"\n\n")
                resp.close()
            counts["dropped"] += 1


async def slow_body(host: str, port: int) -> tuple[int, bytes]:
    """A POST whose body comes a byte every 0.2 s; the answer (the server's 408) as (status, body)."""
    reader, writer = await asyncio.open_connection(host, port)
    body = json.dumps({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}).encode()
    data = b""
    try:
        writer.write(f"POST {CHAT} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode())
        for byte in body:
            writer.write(bytes([byte]))
            await writer.drain()
            with contextlib.suppress(TimeoutError):
                data = await asyncio.wait_for(reader.read(65536), 0.2)  # one read: nothing is lost to a timeout
                break
        while data and (more := await asyncio.wait_for(reader.read(65536), 120)):
            data += more
    except ConnectionError:
        pass
    finally:
        writer.close()
    head, _, payload = data.partition(b"\r\n\r\n")
    return (int(head.split()[1]) if head else 0), payload


async def refused_at_once(host: str, port: int) -> bool | None:
    """For a connection opened at the limit: True when a JSON 503 came (the server sends it at once; 30 s
    is the line between "at once" and "kept open" on a loaded machine), None when the server kept it
    open (there was room after all), False for anything else."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        data = await asyncio.wait_for(reader.read(), 30)
    except TimeoutError:
        await release([(reader, writer)])
        return None
    finally:
        writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return head.startswith(b"HTTP/1.1 503") and is_error_body(body)


async def raw_status(port: int, payload: bytes) -> tuple[int, bytes]:
    """(status, body) of the answer to `payload` sent as is on a fresh connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(payload)
        data = await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


OVERSIZED = [
    (414, b"GET /v1/models?" + b"a" * 16384 + b" HTTP/1.1\r\nHost: x\r\n\r\n"),
    (431, b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 65536 + b"\r\n\r\n"),
    (431, b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-H%d: 1\r\n" % i for i in range(1000)) + b"\r\n"),
    (405, b"GET /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
]


class Abuse:
    """The abusing clients of one window: idle connections held, and `droppers` clients dropping streams."""

    def __init__(self, url: str, port: int, counts: collections.Counter, droppers: int = DROPPERS) -> None:
        self.url, self.port, self.counts, self.num_droppers = url, port, counts, droppers
        self.idle: list[Conn] = []
        self.stop = asyncio.Event()
        self.droppers: list[asyncio.Task] = []

    async def __aenter__(self) -> Abuse:
        self.idle = await open_idle("127.0.0.1", self.port, IDLE)
        self.droppers = [asyncio.create_task(drop_streams(self.url, self.stop, self.counts))
                         for _ in range(self.num_droppers)]  # fmt: skip
        return self

    async def __aexit__(self, *exc) -> None:
        self.stop.set()
        for result in await asyncio.gather(*self.droppers, return_exceptions=True):
            if isinstance(result, BaseException):
                self.counts[f"dropper failed: {result!r}"] += 1
        await release(self.idle)
        self.counts["idle"] += len(self.idle)


async def drained(url: str, timeout_s: float = 120.0) -> float:
    """Seconds until the server holds no request but the probe's (in flight <= 1: the probe may be between
    two streams); an AssertionError naming the count when that does not happen within `timeout_s`."""
    started = time.monotonic()
    async with aiohttp.ClientSession(url) as http:
        while (inflight := (await metrics(http))["gateway_num_requests_inflight"]) > 1:
            assert time.monotonic() - started < timeout_s, f"{inflight:.0f} requests still in flight after the droppers left"
            await asyncio.sleep(0.05)
    return time.monotonic() - started


async def alternate(url: str, port: int, counts: collections.Counter) -> list[tuple[str, float, float]]:
    """PAIRS rounds of an unloaded, a protocol and a loaded window; (kind, start, end) of each measured part.
    Each round starts once the dropped streams of the last one are gone (drained)."""
    windows = []
    for _ in range(PAIRS):
        await drained(url)
        start = time.monotonic()
        await asyncio.sleep(WINDOW_S)
        windows.append(("unloaded", start + SETTLE_S, time.monotonic()))
        for kind, droppers in (("protocol", 0), ("loaded", DROPPERS)):
            async with Abuse(url, port, counts, droppers):
                start = time.monotonic()
                await asyncio.sleep(WINDOW_S)
                windows.append((kind, start + SETTLE_S, time.monotonic()))
    await drained(url)
    return windows


async def probed_windows(url: str, port: int, counts: collections.Counter) -> tuple[dict[str, list[float]], list]:
    """The alternating windows with the probe streaming throughout and 8 slow bodies under way: the probe's
    ITL per measured window by kind, and the slow bodies' answers."""
    spawn = multiprocessing.get_context("spawn")
    stop, (results, sender) = spawn.Event(), spawn.Pipe(duplex=False)
    probe = spawn.Process(target=probe_main, args=(url, stop, sender), daemon=True)
    probe.start()
    try:
        await asyncio.sleep(2.0)  # the probe process is up and streaming
        slow = [asyncio.create_task(slow_body("127.0.0.1", port)) for _ in range(8)]
        windows = await alternate(url, port, counts)
        slow_answers = await asyncio.gather(*slow)
        stop.set()
        arrived = await asyncio.get_running_loop().run_in_executor(None, results.poll, 60)
        streams = results.recv() if arrived else "the probe process sent nothing"
    finally:
        stop.set()
        probe.join(30)
        if probe.is_alive():
            probe.kill()
    assert isinstance(streams, list), streams
    itls = {kind: [itl for k, a, b in windows if k == kind and (itl := window_itl(streams, a, b)) is not None]
            for kind in ("unloaded", "protocol", "loaded")}  # fmt: skip
    return itls, slow_answers


async def over_the_limit(url: str, port: int) -> list[bool | None]:
    """Fills the connection limit and goes OVER connections past it: what each extra connection got (refused_at_once); a
    client connected before the limit filled is served at it."""
    async with aiohttp.ClientSession(url) as http:
        assert await healthy(http) is None  # its connection stays open (keep-alive)
        idle = await open_idle("127.0.0.1", port, FILL)
        try:
            verdicts = await asyncio.gather(*(refused_at_once("127.0.0.1", port) for _ in range(OVER)))
            assert await healthy(http) is None
        finally:
            await release(idle)
    return verdicts


async def test_abuse_keeps_the_stream_latency_within_2x_and_the_server_whole(abuse_server):
    url, port = abuse_server.url, abuse_server.port
    counts: collections.Counter = collections.Counter()
    started = time.monotonic()
    async with aiohttp.ClientSession(url) as http:
        assert await healthy(http) is None  # warm-up: the server's first steps
        before = await metrics(http)
    itls, slow_answers = await probed_windows(url, port, counts)
    print(f"\nITL ms per window: " + "; ".join(f"{k} {[round(x * 1e3, 1) for x in v]}" for k, v in itls.items())
          + f"; {counts['dropped']} streams dropped, {counts['idle']} idle connections held, "
          + f"{len(slow_answers)} bodies a byte at a time; {time.monotonic() - started:.0f} s")
    assert set(counts) == {"dropped", "idle"}, counts
    assert counts["dropped"] >= DROPPERS * PAIRS, counts  # each dropper drops one at least in each loaded window
    for status, body in slow_answers:
        assert status == 408 and is_error_body(body), (status, body[:300])
    for expected, payload in OVERSIZED:  # the in-process edge tests check these too; here on the real server
        status, body = await raw_status(port, payload)
        assert status == expected and is_error_body(body), (expected, status, body[:300])
    verdicts = await over_the_limit(url, port)
    assert False not in verdicts and verdicts.count(True) >= OVER - (MAX_CONNECTIONS - FILL), verdicts
    async with aiohttp.ClientSession(url) as http:  # every connection above was released: there is room
        assert await healthy(http) is None
        after = await settled(http)
    assert after["gateway_kv_cache_free_blocks"] == after["gateway_kv_cache_total_blocks"], "KV blocks leaked"
    assert after["gateway_num_requests_inflight"] == 0
    assert after["gateway_engine_restarts"] == before["gateway_engine_restarts"]
    assert "Traceback" not in abuse_server.output, abuse_server.output[-3000:]
    # the verdict on latency needs a steady baseline: on a machine so busy that the probe saw too few
    # events, or its unloaded windows differ by more than NOISE (other work starving the server), the
    # checks above still held but the 2x rule cannot be judged
    measured = min(len(v) for v in itls.values())
    if measured < PAIRS // 2 or max(itls["unloaded"]) > NOISE * min(itls["unloaded"]):
        pytest.skip(f"the machine is too busy to time the probe stream: {measured} of {PAIRS} windows measured, {itls}")
    assert median(itls["protocol"]) <= 2 * median(itls["unloaded"]), itls
