"""The HTTP server under the app: protocol errors as OpenAI error bodies, a connection limit, graceful drain.

aiohttp answers what never reaches a handler (a URL or header over its limits, too many
headers, a malformed request line) with a plain-text 400 from its protocol class; the
subclasses here render those as JSON with the status the fault deserves (414, 431, 400),
refuse connections over `--max-connections` with a 503, close connections that send no request
within `idle_timeout_s` (so idle ones cannot hold that limit), and `serve` runs the app until
SIGINT/SIGTERM, then drains: new requests get a 503 while the ones in flight finish.
"""

from __future__ import annotations

import asyncio
import signal
import ssl
import time
from dataclasses import dataclass

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError, LineTooLong
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_server import Server

from gateway.errors import ApiError
from gateway.state import SERVICES


@dataclass(frozen=True, slots=True)
class HttpLimits:
    """What the protocol accepts before a request reaches the app (built by the CLI)."""

    max_url_bytes: int = 8192  # the request line; longer is a 414
    max_header_bytes: int = 16384  # one header (name and value); longer is a 431
    max_headers: int = 128  # more is a 431
    max_connections: int | None = None  # open connections; more are answered 503 and closed
    lingering_s: float = 2.0  # after an early error answer, how long the rest of an unread body is drained
    # a connection with no complete request head for this long (idle, or a header sent a byte at a time) is
    # closed, so idle clients cannot hold the connection limit (aiohttp's own default is an hour)
    idle_timeout_s: float = 60.0

    def handler_kwargs(self) -> dict:
        return {"max_line_size": self.max_url_bytes, "max_field_size": self.max_header_bytes,
                "max_headers": self.max_headers, "lingering_time": self.lingering_s,
                "keepalive_timeout": self.idle_timeout_s}  # fmt: skip


def protocol_error(exc: BaseException | None, status: int, limits: HttpLimits) -> ApiError:
    """The OpenAI error for a request aiohttp's parser refused (or a failure outside any handler)."""
    if isinstance(exc, LineTooLong):
        limit = exc.args[1] if len(exc.args) > 1 else None
        if limit == limits.max_url_bytes and limits.max_url_bytes != limits.max_header_bytes:
            return ApiError(414, f"The request URL is longer than {limit} bytes", code="uri_too_long")
        return ApiError(431, f"A request header is longer than {limit} bytes", code="header_too_large")
    if isinstance(exc, HttpProcessingError):
        if "Too many headers" in exc.message:
            return ApiError(431, f"The request has more than {limits.max_headers} headers", code="header_too_large")
        code = exc.code if 400 <= exc.code < 500 else 400
        return ApiError(code, f"Malformed HTTP request: {exc.message}", code="bad_request")
    if 400 <= status < 500:
        return ApiError(status, "Malformed HTTP request", code="bad_request")
    return ApiError(500, "Internal server error", type="internal_error", code="internal_error")


class GatewayRequestHandler(RequestHandler):
    """aiohttp's per-connection protocol with JSON error bodies and the connection limit."""

    def __init__(self, manager: GatewayServer, **kwargs) -> None:
        super().__init__(manager, **kwargs)
        self._gateway_limits = manager.limits

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        limit = self._gateway_limits.max_connections
        if limit is not None and len(self._manager.connections) > limit:
            error = ApiError(503, f"The server holds its limit of {limit} connections; retry later",
                             type="service_unavailable", code="too_many_connections")  # fmt: skip
            body = error.body()
            head = (f"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n")  # fmt: skip
            transport.write(head.encode() + body)  # type: ignore[attr-defined]
            transport.close()

    def handle_error(self, request, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:  # fmt: skip
        error = protocol_error(exc, status, self._gateway_limits)
        if error.status >= 500:
            super().handle_error(request, status, exc, message)  # logs it; raises when a response is under way
        elif request.writer.output_size > 0:
            raise ConnectionError("a response is under way; the connection is dropped")
        response = error.response()
        response.force_close()
        return response


class GatewayServer(Server):
    """Creates GatewayRequestHandler protocols (one per connection)."""

    def __init__(self, *args, limits: HttpLimits, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.limits = limits
        self._handler_kwargs = {**kwargs, **limits.handler_kwargs()}
        for name in ("request_factory", "handler_cancellation", "loop"):
            self._handler_kwargs.pop(name, None)

    def __call__(self) -> RequestHandler:
        return GatewayRequestHandler(self, loop=self._loop, **self._handler_kwargs)


class GatewayRunner(web.AppRunner):
    """An AppRunner whose server is a GatewayServer."""

    def __init__(self, app: web.Application, limits: HttpLimits, shutdown_timeout: float) -> None:
        super().__init__(app, handle_signals=False, access_log=None, shutdown_timeout=shutdown_timeout,
                         handler_cancellation=True)  # fmt: skip
        self.limits = limits

    async def _make_server(self) -> Server:
        base = await super()._make_server()  # runs the app's startup and freezes it
        return GatewayServer(base.request_handler, request_factory=base.request_factory, handler_cancellation=True,
                             loop=asyncio.get_running_loop(), limits=self.limits, access_log=None, debug=False)


@web.middleware
async def drain_middleware(request: web.Request, handler) -> web.StreamResponse:
    """While the server drains for shutdown every new request is a 503 (the ones in flight go on)."""
    if request.app[SERVICES].draining:
        raise ApiError(503, "The server is shutting down; retry on another instance", type="service_unavailable",
                       code="shutting_down", headers={"Connection": "close", "Retry-After": "1"})  # fmt: skip
    return await handler(request)


async def _drain(app: web.Application, timeout_s: float) -> None:
    """Refuses new requests and waits (at most `timeout_s`) for the generations in flight to end."""
    services = app[SERVICES]
    services.draining = True
    deadline = time.monotonic() + timeout_s
    while services.has_pool and services.pool.num_inflight > 0 and time.monotonic() < deadline:
        await asyncio.sleep(0.05)


async def serve(app: web.Application, *, host: str, port: int, ssl_context: ssl.SSLContext | None,
                limits: HttpLimits, shutdown_timeout: float) -> None:  # fmt: skip
    """Runs `app` until SIGINT or SIGTERM, then drains and stops; startup errors propagate."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    # the drain below waits for generations; aiohttp's own wait then only covers what is left (embeddings)
    runner = GatewayRunner(app, limits, shutdown_timeout=min(shutdown_timeout, 5.0))
    try:
        await runner.setup()
        site = web.TCPSite(runner, host, port, ssl_context=ssl_context)
        await site.start()
        await stop.wait()
        await _drain(app, shutdown_timeout)
    finally:
        await runner.cleanup()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
