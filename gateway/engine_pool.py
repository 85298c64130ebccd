"""Data parallel engine replicas behind the gateway: routing (gateway/routing.py), admission control,
failover of requests that had not started, restart of dead replicas, and autoscaling.

A replica is any `engine.EngineClient`: a local engine core (AsyncLLM) or a Ray actor
(engine/ray_client.py); nothing here knows which.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from engine.client import EngineClient, RequestRefused, RequestStream
from engine.outputs import RequestOutput
from gateway.routing import Router, RoutingConfig
from schemas.engine import EngineStats, ModelInfo, SamplingParams

log = logging.getLogger("gateway")

EngineFactory = Callable[[int], Awaitable[EngineClient]]  # index -> a started AsyncLLM (or the tests' fake)
MAX_PLACEMENTS = 3  # replicas a request is tried on before it fails (each died before its first token)


class EngineUnavailable(Exception):
    """No engine can take or finish the request (its core died, or none is alive)."""


class RequestTimedOut(EngineUnavailable):
    """The request ran past `--request-timeout`; it was aborted and its KV blocks freed."""


class Overloaded(Exception):
    """The waiting queue is full; the client should retry later."""


class ReplicaUnplaceable(RuntimeError):
    """A factory cannot place a new replica now (the cluster lacks the resources); autoscaling reports
    it and waits before trying again."""


@dataclass(frozen=True, slots=True)
class PoolLimits:
    """What the pool enforces per request and per core (built by the CLI)."""

    request_timeout_s: float | None = None  # a generation running longer is aborted
    heartbeat_timeout_s: float | None = 5.0  # a core silent this long hangs: it is killed and replaced


@dataclass(frozen=True, slots=True)
class ScalingPolicy:
    """Autoscaling bounds (`--min-replicas`, `--max-replicas`, `--scale-up-wait-s`, `--scale-down-idle-s`)."""

    min_replicas: int
    max_replicas: int
    scale_up_wait_s: float = 2.0  # a request waiting for its first token this long adds a replica
    scale_down_idle_s: float = 60.0  # a replica with nothing in flight this long is removed
    retry_unplaceable_s: float = 30.0  # after a replica could not be placed, the next try waits this long

    def __post_init__(self) -> None:
        if not 1 <= self.min_replicas <= self.max_replicas:
            raise ValueError("--min-replicas must be >= 1 and <= --max-replicas")
        if self.scale_up_wait_s <= 0 or self.scale_down_idle_s <= 0:
            raise ValueError("--scale-up-wait-s and --scale-down-idle-s must be > 0")


@dataclass(slots=True)
class _Slot:
    index: int
    llm: EngineClient
    restarting: bool = False
    draining: bool = False  # being removed: takes no new request, finishes its streams
    load_tokens: int = 0  # uncached prompt + generated tokens of its requests in flight (the router's load)
    idle_since: float = field(default_factory=time.monotonic)
    num_failovers: int = 0  # requests re-routed away from it after it died

    @property
    def live(self) -> bool:
        return self.llm.is_alive and not self.restarting and not self.draining


@dataclass(slots=True)
class _Placement:
    slot: _Slot
    inner: RequestStream
    load: int  # what this request added to slot.load_tokens


class _PoolStream:
    """An admitted request's deltas under the pool's rules: the request timeout; a replica that dies
    before the request's first delta re-routes it to a live one (the client sees nothing of it); a
    replica that dies after ends it with EngineUnavailable. Closing it (idempotent) aborts the request
    if unfinished and returns its load."""

    def __init__(self, pool: EnginePool, request: tuple[str, list[int], SamplingParams], placement: _Placement,
                 started: float, key: object) -> None:  # fmt: skip
        self._pool, self._request, self._placement = pool, request, placement
        self._timeout_s = pool.limits.request_timeout_s
        self._deadline = None if self._timeout_s is None else started + self._timeout_s
        self._streamed = False  # a delta went to the caller: the request can no longer move
        self._attempts = 1
        self._key = key  # its entry in pool._waiting until the first delta

    def __aiter__(self) -> _PoolStream:
        return self

    async def __anext__(self) -> RequestOutput:
        while True:
            placement = self._placement
            try:
                if self._deadline is None:
                    out = await anext(placement.inner)
                else:
                    remaining = max(0.0, self._deadline - time.monotonic())
                    out = await asyncio.wait_for(anext(placement.inner), remaining)
            except TimeoutError:
                await self.aclose()
                raise RequestTimedOut(f"the request ran longer than the server's limit of {self._timeout_s:g} s "
                                      "(--request-timeout); it was stopped") from None  # fmt: skip
            except (StopAsyncIteration, ValueError, asyncio.CancelledError):
                self._settle()
                raise
            except Exception as exc:
                if placement.slot.llm.is_alive:
                    raise
                await self._failed(placement, exc)
                continue
            if not self._streamed:
                self._streamed = True
                self._pool._waiting.pop(self._key, None)
            placement.slot.load_tokens += len(out.token_ids)
            placement.load += len(out.token_ids)
            if out.finished:
                self._settle()
            return out

    async def _failed(self, placement: _Placement, exc: Exception) -> None:
        """The replica died under the request: move it if nothing was streamed yet, else fail it."""
        index = placement.slot.index
        self._settle()
        with contextlib.suppress(Exception):
            await placement.inner.aclose()
        if self._streamed:
            raise EngineUnavailable(f"engine replica {index} died after streaming part of this response "
                                    f"({exc}); the tokens already sent are all there is") from exc  # fmt: skip
        if self._attempts >= MAX_PLACEMENTS:
            raise EngineUnavailable(f"engine replica {index} died before the request started ({exc}), "
                                    f"{self._attempts} replicas in a row") from exc  # fmt: skip
        placement.slot.num_failovers += 1
        self._pool.num_failovers += 1
        log.warning("engine replica %d died before request %s started; re-routing it", index, self._request[0])
        self._attempts += 1
        try:
            self._placement = await self._pool._place(*self._request, exclude={index})
        except EngineUnavailable as none_left:  # the client learns why, not only that nothing is left
            raise EngineUnavailable(f"engine replica {index} died before the request started ({exc}); "
                                    f"{none_left}") from exc  # fmt: skip
        self._pool._waiting[self._key] = time.monotonic()

    def _settle(self) -> None:
        placement = self._placement
        placement.slot.load_tokens -= placement.load
        placement.load = 0
        if placement.slot.llm.num_inflight <= 1:
            placement.slot.idle_since = time.monotonic()
        self._pool._waiting.pop(self._key, None)

    async def aclose(self) -> None:
        self._settle()
        await self._placement.inner.aclose()


class EnginePool:
    """Engine replicas. Started once by the app's cleanup context; handlers call `submit` inside
    `with admit(n)`; the supervisor task (`supervise`) restarts dead replicas and scales the pool."""

    def __init__(self, engines: list[EngineClient], factory: EngineFactory | None, *, max_queued: int,
                 limits: PoolLimits | None = None, routing: RoutingConfig | None = None,
                 scaling: ScalingPolicy | None = None, max_queued_per_replica: int = 0) -> None:  # fmt: skip
        if not engines:
            raise ValueError("an engine pool needs at least one engine")
        self._slots = [_Slot(i, llm) for i, llm in enumerate(engines)]
        self._next_index = len(engines)
        self._factory = factory
        self.max_queued = max_queued  # engine requests allowed in flight across the pool
        self._max_queued_per_replica = max_queued_per_replica  # autoscaling grows the queue with the replicas
        self.limits = limits or PoolLimits()
        self.router = Router(routing)
        self.scaling = scaling
        self.num_inflight = 0
        self.num_restarts = 0
        self.num_failovers = 0
        self.num_scale_ups = 0
        self.num_scale_downs = 0
        self.scaling_problem: str | None = None  # the last reason a replica could not be added
        self._waiting: dict[object, float] = {}  # submitted requests without a first delta -> since when
        self._tasks: set[asyncio.Task] = set()
        self._scaling_up = False
        self._next_scale_up = 0.0
        self._info = (engines[0].tokenizer, engines[0].model_info)

    @classmethod
    async def start(cls, factory: EngineFactory, size: int, *, max_queued: int, limits: PoolLimits | None = None,
                    routing: RoutingConfig | None = None, scaling: ScalingPolicy | None = None,
                    max_queued_per_replica: int = 0) -> EnginePool:  # fmt: skip
        engines = await asyncio.gather(*(factory(i) for i in range(size)))
        return cls(list(engines), factory, max_queued=max_queued, limits=limits, routing=routing, scaling=scaling,
                   max_queued_per_replica=max_queued_per_replica)  # fmt: skip

    # --- facts every engine shares ---------------------------------------------------------

    @property
    def tokenizer(self) -> Any:
        return self._info[0]

    @property
    def model_info(self) -> ModelInfo:
        return self._info[1]

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

    def replicas(self) -> list[dict[str, Any]]:
        """Each replica as /health and /metrics show it."""
        rows = []
        for slot in self._slots:
            stats = slot.llm.stats
            queries = stats.prefix_cache_queries
            state = "restarting" if slot.restarting else "draining" if slot.draining else \
                "ok" if slot.llm.is_alive else "dead"  # fmt: skip
            rows.append({
                "replica": slot.index, "node": str(getattr(slot.llm, "location", "local")), "state": state,
                "inflight": slot.llm.num_inflight if slot.llm.is_alive else 0, "load_tokens": slot.load_tokens,
                "running": stats.num_running, "waiting": stats.num_waiting, "kv_usage": round(stats.kv_usage, 4),
                "num_free_blocks": stats.num_free_blocks, "num_total_blocks": stats.num_total_blocks,
                "prefix_hit_rate": round(stats.prefix_cache_hits / queries, 4) if queries else 0.0,
                "failovers": slot.num_failovers,
            })  # fmt: skip
        return rows

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
        return [slot for slot in self._slots if slot.live]

    async def submit(self, request_id: str, prompt_token_ids: list[int], params: SamplingParams) -> _PoolStream:
        """Routes the request to a live replica and waits for its admission: the stream of deltas,
        RequestRefused ("<field>: ...") for a request it will not serve, or EngineUnavailable. A
        replica that dies before answering passes the request on to another."""
        started, key = time.monotonic(), object()
        self._waiting[key] = started  # waiting from now: admission counts (a queue autoscaling reads)
        try:
            placement = await self._place(request_id, prompt_token_ids, params)
        except BaseException:
            self._waiting.pop(key, None)
            raise
        return _PoolStream(self, (request_id, prompt_token_ids, params), placement, started, key)

    async def _place(self, request_id: str, prompt_token_ids: list[int], params: SamplingParams,
                     exclude: set[int] | None = None) -> _Placement:  # fmt: skip
        exclude = set(exclude or ())
        hashes = self.router.hashes(prompt_token_ids)
        died = ""  # why the last replica tried failed, for the answer when none is left
        while True:
            alive = [slot for slot in self._alive() if slot.index not in exclude]
            if not alive:
                raise EngineUnavailable(f"{died}no engine is available; one is restarting")
            by_index = {slot.index: slot for slot in alive}
            choice = self.router.choose({slot.index: slot.load_tokens for slot in alive}, hashes)
            slot = by_index[choice.key]
            # the tokens it will compute: its prefix cache holds the matched blocks (a hit costs little)
            load = max(1, len(prompt_token_ids) - choice.matched_blocks * self.router.config.block_size)
            slot.load_tokens += load
            try:
                inner = await slot.llm.submit(request_id, prompt_token_ids, params)
            except (RequestRefused, asyncio.CancelledError):
                slot.load_tokens -= load
                raise
            except Exception as exc:
                slot.load_tokens -= load
                if slot.llm.is_alive:
                    raise
                if len(exclude) + 1 >= MAX_PLACEMENTS:
                    raise EngineUnavailable(f"engine replica {slot.index} died before admitting the request "
                                            f"({exc})") from exc  # fmt: skip
                log.warning("engine replica %d died before admitting %s; re-routing it", slot.index, request_id)
                slot.num_failovers += 1
                self.num_failovers += 1
                exclude.add(slot.index)
                died = f"engine replica {slot.index} died before admitting the request ({exc}); "
                continue
            self.router.record(slot.index, hashes)
            return _Placement(slot, inner, load)

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
        """Runs until cancelled: kills cores that fell silent, restarts every core whose process died,
        adds and removes replicas under the scaling policy."""
        last_tick = time.monotonic()
        while True:
            await asyncio.sleep(interval_s)
            now = time.monotonic()
            if now - last_tick < interval_s + 1.0:  # a late tick means this loop was blocked, not the cores
                self._kill_silent(now)
            last_tick = now
            for slot in self._slots:
                if not slot.llm.is_alive and not slot.restarting and not slot.draining and self._factory is not None:
                    slot.restarting = True
                    self._spawn(self._restart(slot))
            if self.scaling is not None and self._factory is not None:
                self._autoscale(now)

    def _spawn(self, coro) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

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
        self.router.forget(slot.index)
        try:
            try:
                await slot.llm.shutdown()
            except Exception:
                log.debug("shutdown of dead engine %d failed", slot.index, exc_info=True)
            delay = 2.0
            while True:
                try:
                    slot.llm = await self._factory(slot.index)
                    break
                except Exception as exc:
                    log.error("restart of engine %d failed (%s); retrying in %.0f s", slot.index, exc, delay)
                    await asyncio.sleep(delay)
                    delay = min(30.0, delay * 2)
            self.num_restarts += 1
            slot.load_tokens, slot.idle_since = 0, time.monotonic()
            log.warning("engine %d restarted", slot.index)
        finally:
            slot.restarting = False

    # --- autoscaling -----------------------------------------------------------------------

    def oldest_wait_s(self, now: float | None = None) -> float:
        """How long the longest-waiting admitted request has waited for its first delta."""
        if not self._waiting:
            return 0.0
        return (now if now is not None else time.monotonic()) - min(self._waiting.values())

    def _autoscale(self, now: float) -> None:
        policy = self.scaling
        serving = [slot for slot in self._slots if not slot.draining]
        if (not self._scaling_up and len(serving) < policy.max_replicas and now >= self._next_scale_up
                and self.oldest_wait_s(now) >= policy.scale_up_wait_s):  # fmt: skip
            self._scaling_up = True
            self._spawn(self._scale_up())
            return
        if len(serving) > policy.min_replicas and not self._scaling_up:
            idle = [slot for slot in serving if slot.live and slot.llm.num_inflight == 0
                    and now - slot.idle_since >= policy.scale_down_idle_s]  # fmt: skip
            if idle:
                victim = max(idle, key=lambda slot: slot.index)  # the newest goes first
                victim.draining = True
                self._spawn(self._scale_down(victim))

    async def _scale_up(self) -> None:
        index = self._next_index
        self._next_index += 1
        log.warning("requests wait %.1f s for a first token; adding engine replica %d", self.oldest_wait_s(), index)
        try:
            llm = await self._factory(index)
        except Exception as exc:
            self.scaling_problem = f"replica {index} could not be added: {exc}"
            self._next_scale_up = time.monotonic() + self.scaling.retry_unplaceable_s
            log.error("%s; next try in %.0f s", self.scaling_problem, self.scaling.retry_unplaceable_s)
            return
        finally:
            self._scaling_up = False
        self.scaling_problem = None
        self._slots.append(_Slot(index, llm))
        self.num_scale_ups += 1
        self.max_queued += self._max_queued_per_replica
        log.warning("engine replica %d added (%d replicas)", index, len(self._slots))

    async def _scale_down(self, slot: _Slot) -> None:
        """Removes a replica once its streams are done (it takes no new ones meanwhile)."""
        log.warning("engine replica %d idle for %g s; removing it", slot.index, self.scaling.scale_down_idle_s)
        while slot.llm.is_alive and slot.llm.num_inflight > 0:
            await asyncio.sleep(0.2)
        self._slots.remove(slot)
        self.router.forget(slot.index)
        self.num_scale_downs += 1
        self.max_queued -= self._max_queued_per_replica
        try:
            await slot.llm.shutdown()
        except Exception:
            log.debug("shutdown of engine replica %d failed", slot.index, exc_info=True)
        log.warning("engine replica %d removed (%d replicas)", slot.index, len(self._slots))

    async def shutdown(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*(slot.llm.shutdown() for slot in self._slots), return_exceptions=True)
