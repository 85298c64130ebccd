"""What chat and completions share: body decoding, model and admission checks, n-way fan-out."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

from aiohttp import web

from gateway.engine_pool import EnginePool, EngineUnavailable, Overloaded, RequestTimedOut
from gateway.errors import ApiError, bad_request, from_value_error
from gateway.request_body import decode_body, read_bytes
from gateway.state import SERVICES, Services
from gateway.structured_request import Constraint
from schemas.engine import SamplingParams

T = TypeVar("T")
_DONE = object()


async def read_body(request: web.Request, type_: type[T]) -> T:
    """The JSON body decoded into `type_`: a 400 when malformed or mistyped, 413 too big, 408 too slow."""
    services = request.app[SERVICES]
    return decode_body(await read_bytes(request, services.settings.body_read_timeout_s), type_)


def check_model(services: Services, model: str | None) -> None:
    """A generation route's `model` names the chat model (or is absent)."""
    if model and model != services.model_name and model != str(services.pool.model_info.path):
        if services.embedder is not None and model in (services.embedder.info.name, services.embedder.info.path):
            raise bad_request(f"The model `{model}` is an embedding model: use /v1/embeddings", "model")
        raise ApiError(
            404,
            f"The model `{model}` does not exist. This server serves `{services.model_name}`.",
            param="model",
            code="model_not_found",
        )


def unavailable(services: Services, exc: Exception) -> ApiError:
    retry = {"Retry-After": str(services.settings.retry_after_s)}
    if isinstance(exc, RequestTimedOut):
        return ApiError(408, f"The request timed out: {exc}", code="request_timeout")
    if isinstance(exc, Overloaded):
        return ApiError(429, f"The server is overloaded: {exc}", type="rate_limit_error",
                        code="server_overloaded", headers=retry)
    return ApiError(503, f"The engine is unavailable: {exc}", type="service_unavailable",
                    code="engine_unavailable", headers=retry)


@contextlib.contextmanager
def admit(services: Services, num_requests: int) -> Iterator[None]:
    """Holds queue places for one HTTP call; a full queue is a 429, no live engine a 503, and a call
    that alone needs more places than the queue has a 400 (a retry could never succeed)."""
    limit = services.pool.max_queued
    if num_requests > limit:
        raise bad_request(f"This request needs {num_requests} engine requests (prompts x n); the server "
                          f"takes at most {limit} at once", "n")  # fmt: skip
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(services.pool.admit(num_requests))
        except (Overloaded, EngineUnavailable) as exc:
            raise unavailable(services, exc) from None
        yield


def validate(services: Services, prompt_token_ids: list[int], params: SamplingParams) -> None:
    try:
        services.pool.validate(prompt_token_ids, params)
    except ValueError as exc:
        raise from_value_error(exc) from None


async def check_constraint(services: Services, constraint: Constraint | None) -> None:
    """Compiles the request's output constraint before anything is scheduled or streamed:
    a schema the grammar compiler refuses, or one that overruns the compile limit, is a 400."""
    if constraint is None:
        return
    try:
        await services.pool.check_structured(constraint.spec)
    except ValueError as exc:
        raise bad_request(f"{constraint.param}: {exc}", constraint.param) from None


async def _pump(pool: EnginePool, queue: asyncio.Queue, index: int, request_id: str,
                prompt_token_ids: list[int], params: SamplingParams) -> None:
    try:
        async for out in pool.generate(request_id, prompt_token_ids, params):
            queue.put_nowait((index, out))
    except Exception as exc:  # handed to the consumer, which re-raises it
        queue.put_nowait((index, exc))
    finally:
        queue.put_nowait((index, _DONE))


Job = tuple[list[int], SamplingParams]  # one engine request: prompt token ids and its params


async def fan_out(pool: EnginePool, request_id: str, jobs: list[Job]) -> AsyncIterator[tuple[int, Any]]:
    """Runs one engine request per job (choice) and yields (job index, delta output) as they come.

    Closing this iterator (or cancelling its consumer) cancels every engine request,
    which aborts them in the engine.
    """
    if len(jobs) == 1:
        stream = pool.generate(request_id, *jobs[0])
        try:
            async for out in stream:
                yield 0, out
        finally:
            await stream.aclose()
        return
    queue: asyncio.Queue = asyncio.Queue()
    tasks = [
        asyncio.create_task(_pump(pool, queue, i, f"{request_id}-{i}", prompt_ids, params))
        for i, (prompt_ids, params) in enumerate(jobs)
    ]
    try:
        num_open = len(tasks)
        while num_open:
            index, item = await queue.get()
            if item is _DONE:
                num_open -= 1
            elif isinstance(item, Exception):
                raise item
            else:
                yield index, item
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def drain(services: Services, events: AsyncIterator[tuple[int, Any]], absorb: Callable[[int, Any], None]) -> None:
    """Feeds every (choice index, delta) of a non-streaming call to `absorb`; engine failures
    become API errors, and the engine requests are closed whatever happens."""
    try:
        async for index, out in events:
            absorb(index, out)
    except EngineUnavailable as exc:
        raise unavailable(services, exc) from None
    except ValueError as exc:  # the engine refused the request after admission
        raise from_value_error(exc) from None
    finally:
        await events.aclose()
