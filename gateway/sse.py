"""Server-sent events: `data: <json>` events, an error event, and the closing `data: [DONE]`."""

from __future__ import annotations

import msgspec
from aiohttp import web

from gateway.errors import ApiError

_ENCODER = msgspec.json.Encoder()


class SseWriter:
    """One SSE response. Opened by a streaming handler before the first event; `send`
    raises ConnectionResetError once the client is gone (the handler then aborts)."""

    def __init__(self, request: web.Request) -> None:
        self.request = request
        self.response = web.StreamResponse(
            status=200,
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
            },
        )

    async def open(self) -> None:
        await self.response.prepare(self.request)

    async def send(self, event: msgspec.Struct) -> None:
        await self.response.write(b"data: " + _ENCODER.encode(event) + b"\n\n")

    async def send_many(self, events: list[msgspec.Struct]) -> None:
        if events:
            await self.response.write(b"".join(b"data: " + _ENCODER.encode(e) + b"\n\n" for e in events))

    async def error(self, error: ApiError) -> None:
        """An error after the stream started: an error event, then the end of the stream."""
        try:
            await self.response.write(b"data: " + error.body() + b"\n\n")
            await self.done()
        except ConnectionResetError:
            pass

    async def done(self) -> None:
        await self.response.write(b"data: [DONE]\n\n")
        await self.response.write_eof()


class EventSseWriter(SseWriter):
    """SSE as the Responses and Messages APIs send it: `event: <type>` before each `data:` line, no
    `[DONE]`; an error after the stream opened is the API's own error event (`error_event`)."""

    def __init__(self, request: web.Request, error_event) -> None:
        super().__init__(request)
        self._error_event = error_event  # ApiError -> the event struct that ends the stream

    @staticmethod
    def _frame(event: msgspec.Struct) -> bytes:
        tag = type(event).__struct_config__.tag
        name = tag if isinstance(tag, str) else getattr(event, "type", "message")
        return b"event: " + name.encode() + b"\ndata: " + _ENCODER.encode(event) + b"\n\n"

    async def send(self, event: msgspec.Struct) -> None:
        await self.response.write(self._frame(event))

    async def send_many(self, events: list[msgspec.Struct]) -> None:
        if events:
            await self.response.write(b"".join(self._frame(e) for e in events))

    async def error(self, error: ApiError) -> None:
        try:
            await self.send(self._error_event(error))
            await self.response.write_eof()
        except ConnectionResetError:
            pass

    async def done(self) -> None:
        await self.response.write_eof()
