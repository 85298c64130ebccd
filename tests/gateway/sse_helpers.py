"""Reads an SSE response into its decoded `data:` events (the final [DONE] kept as the string)."""

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
