"""The well-behaved client of the load tests: back-to-back greedy streams, every content event timestamped,
in a process of its own.

It uses blocking stdlib HTTP in its own process so that the abusing clients in the test's event loop cannot
delay its timestamps (time.monotonic is one clock for all processes): what it measures is the server."""

from __future__ import annotations

import http.client
import json
import time
from urllib.parse import urlsplit

CHAT = "/v1/chat/completions"


def stream_events(url: str, stop, max_tokens: int = 400) -> list[list[float]]:
    """The monotonic times of the content events of each stream; streams run one after another until
    `stop` (a multiprocessing Event) is set, which drops the one under way."""
    parts = urlsplit(url)
    body = json.dumps({"messages": [{"role": "user", "content": "Count"}], "max_tokens": max_tokens,
                       "ignore_eos": True, "temperature": 0, "stream": True})  # fmt: skip
    streams: list[list[float]] = []
    while not stop.is_set():
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        try:
            conn.request("POST", CHAT, body=body, headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            if resp.status != 200:
                raise RuntimeError(f"the probe stream answered {resp.status}: {resp.read()[:300]!r}")
            times: list[float] = []
            streams.append(times)
            while (line := resp.readline()) and not stop.is_set():
                if line.startswith(b"data: {") and b'"content"' in line:
                    times.append(time.monotonic())
        finally:
            conn.close()
    return streams


def probe_main(url: str, stop, results) -> None:
    """The probe process: stream_events until `stop`, then the streams sent down the `results` pipe."""
    try:
        results.send(stream_events(url, stop))
    except Exception as exc:  # the test reports it
        results.send(exc)


def window_itl(streams: list[list[float]], start: float, end: float) -> float | None:
    """The mean interval (s) between successive content events of one stream, both inside [start, end)
    (None when there are fewer than 3 such intervals). Events that carry several tokens, or none while a
    character is incomplete, happen alike in every window, so windows compare fairly."""
    intervals = [b - a for times in streams for a, b in zip(times, times[1:], strict=False) if start <= a and b < end]
    return sum(intervals) / len(intervals) if len(intervals) >= 3 else None


def median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
