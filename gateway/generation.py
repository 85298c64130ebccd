"""What chat and completions share: body decoding, model checks, admission, n-way fan-out, the response skeleton."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Protocol, TypeVar

import msgspec
from aiohttp import web

from engine.client import RequestRefused
from gateway.engine_pool import EngineUnavailable, Overloaded, RequestTimedOut
from gateway.errors import ApiError, bad_request, from_value_error
from gateway.request_body import decode_body, read_bytes
from gateway.sse import SseWriter
from gateway.state import SERVICES, Services
from schemas.engine import SamplingParams

T = TypeVar("T")
_DONE = object()
_ENCODER = msgspec.json.Encoder()
log = logging.getLogger("gateway")


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


def refused(exc: RequestRefused, names: dict[str, str]) -> ApiError:
    """The engine's refusal as a 400 naming the request's own field (`names` maps engine field names,
    e.g. `structured` -> `response_format`, `prompt` -> `messages`, onto the route's)."""
    param = names.get(exc.field, exc.field)
    named = all(part.isidentifier() for part in param.split("."))  # a dotted path names a nested field
    return ApiError(400, f"{param}: {exc.reason}", param=param if named else None, code="invalid_value")


Job = tuple[list[int], SamplingParams]  # one engine request: prompt token ids and its params


async def start(services: Services, request_id: str, jobs: list[Job], names: dict[str, str]) -> Events:
    """Submits one engine request per job (choice) and waits until the engine has admitted them all:
    a refusal is a 400 (the others are aborted), no engine a 503, before anything is streamed."""
    ids = [request_id] if len(jobs) == 1 else [f"{request_id}-{i}" for i in range(len(jobs))]
    tasks = [asyncio.ensure_future(services.pool.submit(rid, *job)) for rid, job in zip(ids, jobs)]
    try:
        streams = await asyncio.gather(*tasks)
    except BaseException as exc:
        for task in tasks:
            task.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(*(r.aclose() for r in results if not isinstance(r, BaseException)))
        if isinstance(exc, RequestRefused):
            raise refused(exc, names) from None
        if isinstance(exc, EngineUnavailable):
            raise unavailable(services, exc) from None
        raise
    return Events(streams)


class Events:
    """The admitted streams of one HTTP call merged into (choice index, delta) pairs as they come;
    `aclose` aborts every unfinished engine request."""

    def __init__(self, streams: list) -> None:
        self._streams = streams
        self._queue: asyncio.Queue = asyncio.Queue()
        self._tasks: list[asyncio.Task] = []
        self._num_open = len(streams)

    def __aiter__(self) -> Events:
        return self

    async def __anext__(self) -> tuple[int, Any]:
        if len(self._streams) == 1:  # one choice: no pump tasks
            return 0, await anext(self._streams[0])
        if not self._tasks:
            self._tasks = [asyncio.create_task(self._pump(i, s)) for i, s in enumerate(self._streams)]
        while self._num_open:
            index, item = await self._queue.get()
            if item is _DONE:
                self._num_open -= 1
            elif isinstance(item, BaseException):
                raise item
            else:
                return index, item
        raise StopAsyncIteration

    async def _pump(self, index: int, stream) -> None:
        try:
            async for out in stream:
                self._queue.put_nowait((index, out))
        except Exception as exc:  # handed to the consumer, which re-raises it
            self._queue.put_nowait((index, exc))
        finally:
            self._queue.put_nowait((index, _DONE))

    async def aclose(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await asyncio.gather(*(stream.aclose() for stream in self._streams), return_exceptions=True)


async def drain(services: Services, events: Events, absorb: Callable[[int, Any], None]) -> None:
    """Feeds every (choice index, delta) of a non-streaming call to `absorb`; engine failures
    become API errors, and the engine requests are closed whatever happens."""
    try:
        async for index, out in events:
            absorb(index, out)
    except EngineUnavailable as exc:
        raise unavailable(services, exc) from None
    except ValueError as exc:  # the engine failed the request after admission
        raise from_value_error(exc) from None
    finally:
        await events.aclose()


Writer = Callable[[SseWriter, Events], Awaitable[None]]


async def stream(request: web.Request, services: Services, call_id: str, events: Events, write: Writer,
                 sse: SseWriter | None = None) -> web.StreamResponse:  # fmt: skip
    """An SSE response: `write` sends the call's chunks from `events`, then `[DONE]`; a failure after
    the stream opened is an error event; a client that leaves aborts its engine requests. `sse` is
    the API's writer (default: chat's `data:` lines)."""
    sse = sse or SseWriter(request)
    try:
        await sse.open()
        await write(sse, events)
        await sse.done()
    except ConnectionResetError:
        pass  # the client left: closing `events` below aborts its engine requests
    except EngineUnavailable as exc:
        await sse.error(unavailable(services, exc))
    except ApiError as exc:
        await sse.error(exc)
    except ValueError as exc:
        await sse.error(from_value_error(exc))
    except Exception:
        log.exception("stream %s failed", call_id)
        await sse.error(ApiError(500, "Internal server error", type="internal_error", code="internal_error"))
    finally:
        await events.aclose()
    return sse.response


async def respond(request: web.Request, services: Services, call: Call,
                  sse: SseWriter | None = None) -> web.StreamResponse:  # fmt: skip
    """The skeleton every generation route shares: hold queue places, admit the call's engine
    requests (400/429/503 as plain JSON), then stream its chunks (through `sse`, default chat's
    writer) or answer with its whole body."""
    with admit(services, len(call.jobs)):
        events = await start(services, call.id, call.jobs, call.names)
        services.metrics.prompt_tokens.inc(call.num_prompt_tokens)
        if call.streaming:
            return await stream(request, services, call.id, events, call.write_stream, sse)
        await drain(services, events, call.absorb)
        return web.Response(body=_ENCODER.encode(call.body()), content_type="application/json")


class Call(Protocol):
    """What a route hands `respond`: its engine jobs, how to name engine fields, and its output."""

    id: str
    jobs: list[Job]
    names: dict[str, str]
    num_prompt_tokens: int
    streaming: bool

    def absorb(self, index: int, out: Any) -> None: ...

    def body(self) -> msgspec.Struct: ...

    async def write_stream(self, sse: SseWriter, events: Events) -> None: ...
