"""The application factory: routes, middlewares, and the engines' lifetime in a cleanup context."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from aiohttp import web

from gateway import (
    openapi,
    routes_embeddings,
    routes_messages,
    routes_misc,
    routes_playground,
    routes_profile,
    routes_responses,
)
from gateway.auth import auth_middleware
from gateway.engine_pool import EnginePool
from gateway.errors import error_middleware
from gateway.http_server import drain_middleware
from gateway.metrics import GatewayMetrics, metrics_middleware
from gateway.routes_chat import chat_completions
from gateway.routes_completions import completions
from gateway.state import SERVICES, GatewaySettings, Services

log = logging.getLogger("gateway")

PoolStarter = Callable[[], Awaitable[EnginePool]]
EmbedderStarter = Callable[[], Awaitable[Any]]  # -> a started engine.embedding.AsyncEmbedder


async def _start_engines(start_pool: PoolStarter, start_embedder: EmbedderStarter | None) -> tuple[EnginePool, Any]:
    """Starts the pool and the embedder side by side; if either fails, the other is shut down."""
    starts = [start_pool()] + ([start_embedder()] if start_embedder is not None else [])
    results = await asyncio.gather(*starts, return_exceptions=True)
    failed = next((r for r in results if isinstance(r, BaseException)), None)
    if failed is not None:
        for result in results:
            if not isinstance(result, BaseException):
                await result.shutdown()
        raise failed
    return results[0], (results[1] if len(results) > 1 else None)


async def _supervise_embedder(services: Services, start_embedder: EmbedderStarter, interval_s: float = 0.5) -> None:
    """Runs until cancelled: an encoder whose process died is replaced (its requests in flight got a 503)."""
    while True:
        await asyncio.sleep(interval_s)
        if services.embedder.is_alive:
            continue
        log.warning("the embedding encoder died; restarting it")
        await services.embedder.shutdown()
        try:
            services.embedder = await start_embedder()
            log.warning("the embedding encoder restarted")
        except Exception:
            log.exception("restart of the embedding encoder failed; retrying")
            await asyncio.sleep(2.0)


def _engine_context(start_pool: PoolStarter, start_embedder: EmbedderStarter | None,
                    on_ready: Callable[[Services], None] | None):
    async def engine_context(app: web.Application) -> AsyncIterator[None]:
        services = app[SERVICES]
        pool, embedder = await _start_engines(start_pool, start_embedder)
        services.attach(pool, embedder)
        supervisors = [asyncio.create_task(pool.supervise())]
        if embedder is not None:
            supervisors.append(asyncio.create_task(_supervise_embedder(services, start_embedder)))
        if on_ready is not None:
            on_ready(services)
        try:
            yield
        finally:
            for supervisor in supervisors:
                supervisor.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await supervisor
            await pool.shutdown()
            if services.embedder is not None:
                await services.embedder.shutdown()

    return engine_context


def create_app(
    settings: GatewaySettings,
    start_pool: PoolStarter,
    *,
    start_embedder: EmbedderStarter | None = None,
    on_ready: Callable[[Services], None] | None = None,
) -> web.Application:
    """A configured gateway app; the starters are awaited at startup, the engines shut down at cleanup."""
    metrics = GatewayMetrics()
    middlewares = [metrics_middleware(metrics), error_middleware, drain_middleware]
    if settings.api_keys:
        middlewares.append(auth_middleware(settings.api_keys, settings.protect_metrics))
    app = web.Application(middlewares=middlewares, client_max_size=settings.max_body_bytes)
    app[SERVICES] = Services(settings=settings, metrics=metrics)
    app.router.add_post("/v1/chat/completions", chat_completions)
    app.router.add_post("/v1/completions", completions)
    routes_responses.add_routes(app)
    routes_messages.add_routes(app)
    routes_embeddings.add_routes(app)
    routes_misc.add_routes(app)
    routes_playground.add_routes(app)
    if settings.profiler_dir:
        routes_profile.add_routes(app)
    openapi.add_routes(app)
    app.cleanup_ctx.append(_engine_context(start_pool, start_embedder, on_ready))
    return app
