"""POST /start_profile and /stop_profile: torch's profiler in every engine core, one Chrome trace per core.

Added only when the server runs with --profiler-dir (without it the routes are 404)."""

from __future__ import annotations

import asyncio
import os
import time

import msgspec
from aiohttp import web

from gateway.errors import ApiError
from gateway.state import SERVICES
from schemas.openai_server import ProfileResponse

_ENCODER = msgspec.json.Encoder()
_LOCK = web.AppKey("profile_lock", asyncio.Lock)


def _json(body: ProfileResponse) -> web.Response:
    return web.Response(body=_ENCODER.encode(body), content_type="application/json")


def _conflict(exc: RuntimeError) -> ApiError:
    return ApiError(409, f"Profiler: {exc}", param=None, code="profiler_state")


async def start_profile(request: web.Request) -> web.Response:
    services = request.app[SERVICES]
    async with request.app[_LOCK]:
        try:
            await services.pool.start_profile()
        except RuntimeError as exc:
            raise _conflict(exc) from None
    return _json(ProfileResponse(status="started"))


async def stop_profile(request: web.Request) -> web.Response:
    services = request.app[SERVICES]
    directory = os.path.abspath(services.settings.profiler_dir or ".")
    stamp = time.strftime("%Y%m%d-%H%M%S") + f"-{time.time_ns() % 1_000_000_000:09d}"
    async with request.app[_LOCK]:
        try:
            files = await services.pool.stop_profile(lambda i: os.path.join(directory, f"profile-{stamp}-core{i}.json"))
        except RuntimeError as exc:
            raise _conflict(exc) from None
    return _json(ProfileResponse(status="stopped", files=files))


def add_routes(app: web.Application) -> None:
    app[_LOCK] = asyncio.Lock()
    app.router.add_post("/start_profile", start_profile)
    app.router.add_post("/stop_profile", stop_profile)
