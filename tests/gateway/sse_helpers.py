"""Reads an SSE response into its decoded `data:` events (the final [DONE] kept as the string), or into
(event name, data) pairs for the Responses and Messages APIs' named events."""

from __future__ import annotations

import json


async def read_events(response) -> list:
    events = []
    buffer = b""
    async for data in response.content.iter_any():
        buffer += data
        while b"\n\n" in buffer:
            raw, buffer = buffer.split(b"\n\n", 1)
            assert raw.startswith(b"data: "), raw
            payload = raw[len(b"data: "):]
            events.append("[DONE]" if payload == b"[DONE]" else json.loads(payload))
    assert buffer == b""
    return events


async def read_named_events(response) -> list[tuple[str, dict]]:
    """(event name, data) of an `event:` / `data:` SSE stream."""
    events, buffer = [], b""
    async for data in response.content.iter_any():
        buffer += data
        while b"\n\n" in buffer:
            raw, buffer = buffer.split(b"\n\n", 1)
            name, data_line = raw.split(b"\n")
            assert name.startswith(b"event: ") and data_line.startswith(b"data: "), raw
            events.append((name[7:].decode(), json.loads(data_line[6:])))
    return events
