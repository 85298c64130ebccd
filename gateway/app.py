"""The application factory: routes, middlewares, and the engine pool's lifetime in a cleanup context."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

from aiohttp import web

from gateway import routes_misc, routes_playground
from gateway.engine_pool import EnginePool
from gateway.errors import ApiError, error_middleware
from gateway.metrics import GatewayMetrics, metrics_middleware
from gateway.routes_chat import chat_completions
from gateway.routes_completions import completions
from gateway.state import SERVICES, GatewaySettings, Services

log = logging.getLogger("gateway")

PoolStarter = Callable[[], Awaitable[EnginePool]]
_OPEN_PATHS = ("/health", "/metrics")


def auth_middleware(api_key: str):
    """Requires `Authorization: Bearer <api_key>` on every route except health, metrics and the playground page."""
    expected = f"Bearer {api_key}".encode()

    @web.middleware
    async def middleware(request: web.Request, handler) -> web.StreamResponse:
        if request.path not in _OPEN_PATHS and not routes_playground.is_public(request.path):
            given = request.headers.get("Authorization", "").encode()
            if not hmac.compare_digest(given, expected):
                raise ApiError(401, "Incorrect API key provided.", code="invalid_api_key")
        return await handler(request)

    return middleware


def _engine_context(start_pool: PoolStarter, on_ready: Callable[[Services], None] | None):
    async def engine_context(app: web.Application) -> AsyncIterator[None]:
        services = app[SERVICES]
        pool = await start_pool()
        services.attach(pool)
        supervisor = asyncio.create_task(pool.supervise())
        if on_ready is not None:
            on_ready(services)
        try:
            yield
        finally:
            supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await supervisor
            await pool.shutdown()

    return engine_context


def create_app(
    settings: GatewaySettings,
    start_pool: PoolStarter,
    *,
    on_ready: Callable[[Services], None] | None = None,
) -> web.Application:
    """A configured gateway app; `start_pool` is awaited at startup, the pool shut down at cleanup."""
    metrics = GatewayMetrics()
    middlewares = [metrics_middleware(metrics), error_middleware]
    if settings.api_key:
        middlewares.append(auth_middleware(settings.api_key))
    app = web.Application(middlewares=middlewares, client_max_size=settings.max_body_bytes)
    app[SERVICES] = Services(settings=settings, metrics=metrics)
    app.router.add_post("/v1/chat/completions", chat_completions)
    app.router.add_post("/v1/completions", completions)
    routes_misc.add_routes(app)
    routes_playground.add_routes(app)
    app.cleanup_ctx.append(_engine_context(start_pool, on_ready))
    return app
