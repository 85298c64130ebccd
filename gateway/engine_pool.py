"""Data parallel engines behind the gateway: least-loaded routing, admission control, restart of dead cores."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from engine.client import EngineClient, RequestRefused, RequestStream
from engine.outputs import RequestOutput
from schemas.engine import EngineStats, ModelInfo, SamplingParams

log = logging.getLogger("gateway")

EngineFactory = Callable[[int], Awaitable[EngineClient]]  # index -> a started AsyncLLM (or the tests' fake)


class EngineUnavailable(Exception):
    """No engine can take or finish the request (its core died, or none is alive)."""


class RequestTimedOut(EngineUnavailable):
    """The request ran past `--request-timeout`; it was aborted and its KV blocks freed."""


class Overloaded(Exception):
    """The waiting queue is full; the client should retry later."""


@dataclass(frozen=True, slots=True)
class PoolLimits:
    """What the pool enforces per request and per core (built by the CLI)."""

    request_timeout_s: float | None = None  # a generation running longer is aborted
    heartbeat_timeout_s: float | None = 5.0  # a core silent this long hangs: it is killed and replaced


@dataclass(slots=True)
class _Slot:
    index: int
    llm: EngineClient
    restarting: bool = False


class _PoolStream:
    """An admitted request's deltas under the pool's rules: the request timeout, and a dead core's
    failure as EngineUnavailable. Closing it (idempotent) aborts the request if unfinished."""

    def __init__(self, slot: _Slot, inner: RequestStream, timeout_s: float | None, started: float) -> None:
        self._slot, self._inner, self._timeout_s = slot, inner, timeout_s
        self._deadline = None if timeout_s is None else started + timeout_s

    def __aiter__(self) -> _PoolStream:
        return self

    async def __anext__(self) -> RequestOutput:
        try:
            if self._deadline is None:
                return await anext(self._inner)
            return await asyncio.wait_for(anext(self._inner), max(0.0, self._deadline - time.monotonic()))
        except TimeoutError:
            await self._inner.aclose()
            raise RequestTimedOut(f"the request ran longer than the server's limit of {self._timeout_s:g} s "
                                  "(--request-timeout); it was stopped") from None  # fmt: skip
        except (StopAsyncIteration, ValueError, asyncio.CancelledError):
            raise
        except Exception as exc:
            if self._slot.llm.is_alive:
                raise
            raise EngineUnavailable(f"engine {self._slot.index} died while serving the request ({exc})") from exc

    async def aclose(self) -> None:
        await self._inner.aclose()


class EnginePool:
    """N engine clients. Started once by the app's cleanup context; handlers call
    `generate` inside `with admit(n)`; the supervisor task calls `supervise` and restarts dead cores."""

    def __init__(self, engines: list[EngineClient], factory: EngineFactory | None, *, max_queued: int,
                 limits: PoolLimits | None = None) -> None:  # fmt: skip
        if not engines:
            raise ValueError("an engine pool needs at least one engine")
        self._slots = [_Slot(i, llm) for i, llm in enumerate(engines)]
        self._factory = factory
        self.max_queued = max_queued  # engine requests allowed in flight across the pool
        self.limits = limits or PoolLimits()
        self.num_inflight = 0
        self.num_restarts = 0
        self._restarts: set[asyncio.Task] = set()

    @classmethod
    async def start(cls, factory: EngineFactory, size: int, *, max_queued: int,
                    limits: PoolLimits | None = None) -> EnginePool:  # fmt: skip
        engines = await asyncio.gather(*(factory(i) for i in range(size)))
        return cls(list(engines), factory, max_queued=max_queued, limits=limits)

    # --- facts every engine shares ---------------------------------------------------------

    @property
    def tokenizer(self) -> Any:
        return self._slots[0].llm.tokenizer

    @property
    def model_info(self) -> ModelInfo:
        return self._slots[0].llm.model_info

    @property
    def size(self) -> int:
        return len(self._slots)

    @property
    def num_alive(self) -> int:
        return sum(1 for slot in self._slots if slot.llm.is_alive and not slot.restarting)

    def stats(self) -> EngineStats:
        total = EngineStats()
        for slot in self._slots:
            stats = slot.llm.stats
            for name in EngineStats.__struct_fields__:
                if name != "kv_usage":
                    setattr(total, name, getattr(total, name) + getattr(stats, name))
        if total.num_total_blocks:
            total.kv_usage = 1.0 - total.num_free_blocks / total.num_total_blocks
        return total

    # --- requests --------------------------------------------------------------------------

    @contextlib.contextmanager
    def admit(self, num_requests: int) -> Iterator[None]:
        """Holds `num_requests` places in the queue for the block's duration (a whole HTTP call).

        Raises Overloaded when they would overflow it, EngineUnavailable when no engine is alive.
        """
        if self.num_alive == 0:
            raise EngineUnavailable("no engine is available; one is restarting")
        if self.num_inflight + num_requests > self.max_queued:
            raise Overloaded(f"{self.num_inflight} requests in flight, the limit is {self.max_queued}")
        self.num_inflight += num_requests
        try:
            yield
        finally:
            self.num_inflight -= num_requests

    def _alive(self) -> list[_Slot]:
        return [slot for slot in self._slots if slot.llm.is_alive and not slot.restarting]

    def _pick(self) -> _Slot:
        alive = self._alive()
        if not alive:
            raise EngineUnavailable("no engine is available; one is restarting")
        return min(alive, key=lambda slot: slot.llm.num_inflight)

    async def submit(self, request_id: str, prompt_token_ids: list[int], params: SamplingParams) -> _PoolStream:
        """Sends the request to the least-loaded live engine and waits for its admission: the stream
        of deltas, RequestRefused ("<field>: ...") for a request it will not serve, or EngineUnavailable."""
        slot = self._pick()
        started = time.monotonic()
        try:
            inner = await slot.llm.submit(request_id, prompt_token_ids, params)
        except (RequestRefused, asyncio.CancelledError):
            raise
        except Exception as exc:
            if slot.llm.is_alive:
                raise
            raise EngineUnavailable(f"engine {slot.index} died before admitting the request ({exc})") from exc
        return _PoolStream(slot, inner, self.limits.request_timeout_s, started)

    # --- profiling ---------------------------------------------------------------------------

    async def start_profile(self) -> None:
        """Starts torch's profiler in every live core; RuntimeError when one runs it already."""
        await asyncio.gather(*(slot.llm.start_profile() for slot in self._alive()))

    async def stop_profile(self, path_of: Callable[[int], str]) -> list[str]:
        """Stops the profilers; core i writes its Chrome trace to `path_of(i)`. Returns the files written."""
        slots = self._alive()
        return list(await asyncio.gather(*(slot.llm.stop_profile(path_of(slot.index)) for slot in slots)))

    # --- supervision -----------------------------------------------------------------------

    async def supervise(self, interval_s: float = 0.5) -> None:
        """Runs until cancelled: kills cores that fell silent, restarts every core whose process died."""
        last_tick = time.monotonic()
        while True:
            await asyncio.sleep(interval_s)
            now = time.monotonic()
            if now - last_tick < interval_s + 1.0:  # a late tick means this loop was blocked, not the cores
                self._kill_silent(now)
            last_tick = now
            for slot in self._slots:
                if not slot.llm.is_alive and not slot.restarting and self._factory is not None:
                    slot.restarting = True
                    task = asyncio.create_task(self._restart(slot))
                    self._restarts.add(task)
                    task.add_done_callback(self._restarts.discard)

    def _kill_silent(self, now: float) -> None:
        timeout_s = self.limits.heartbeat_timeout_s
        if timeout_s is None:
            return
        for slot in self._slots:
            last_heard = slot.llm.last_heard
            if slot.restarting or last_heard is None or not slot.llm.is_alive or now - last_heard < timeout_s:
                continue
            log.error("engine %d sent no heartbeat for %.1f s; killing it", slot.index, now - last_heard)
            slot.llm.kill(f"engine core {slot.index} stopped answering (no heartbeat for {now - last_heard:.1f} s); "
                          "it was killed and is being restarted")  # fmt: skip

    async def _restart(self, slot: _Slot) -> None:
        log.warning("engine %d died; restarting it", slot.index)
        try:
            try:
                await slot.llm.shutdown()
            except Exception:
                log.debug("shutdown of dead engine %d failed", slot.index, exc_info=True)
            while True:
                try:
                    slot.llm = await self._factory(slot.index)
                    break
                except Exception:
                    log.exception("restart of engine %d failed; retrying", slot.index)
                    await asyncio.sleep(2.0)
            self.num_restarts += 1
            log.warning("engine %d restarted", slot.index)
        finally:
            slot.restarting = False

    async def shutdown(self) -> None:
        for task in list(self._restarts):
            task.cancel()
        await asyncio.gather(*(slot.llm.shutdown() for slot in self._slots), return_exceptions=True)
