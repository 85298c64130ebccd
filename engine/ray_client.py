"""Engine replicas as Ray actors: the engine-core loop runs inside an actor, its wire protocol rides on Ray.

`RayEngine` is `AsyncLLM` over a `RayCoreTransport` instead of a local socket: the same admission,
outputs, heartbeats and errors as a local engine core (the bytes are the same length-prefixed
msgpack frames of engine/wire.py), so the gateway's pool cannot tell the two apart. Inside the
actor, `serve_core` runs on a thread against one end of a socketpair; the actor pumps client
frames in (`push`, ordered by a sequence number) and core frames out (`outputs`, one Ray
streaming generator for the replica's lifetime). Ray places the actor (its CPUs: the core's
threads; a GPU where the config asks for CUDA), carries the bytes, and reports the actor's death
(process killed, node lost) as the end of that generator.

Needs the PyPI package `ray` (the `[ray]` extra); nothing else in the engine imports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import socket
import threading
import time

from engine.async_llm import AsyncLLM
from engine.config import EngineConfig
from engine.core_loop import serve_core
from engine.loader import resolve_model
from engine.tokenizer import load_tokenizer
from engine.wire import frame, read_core_message
from schemas.engine import CoreFailed, CoreReady, Shutdown

log = logging.getLogger(__name__)

_CHUNK = 1 << 20


class ReplicaUnplaceable(RuntimeError):
    """Ray cannot place the replica: the cluster lacks the CPUs (or GPU) it asks for."""


class EngineReplicaActor:
    """The actor body (made a Ray actor class by `_actor_class`): one engine core on a thread."""

    def __init__(self, config: EngineConfig) -> None:
        self._ours, theirs = socket.socketpair()
        self._thread = threading.Thread(target=serve_core, args=(config, theirs), kwargs={"freeze_heap": True}, daemon=True, name="engine-core")
        self._thread.start()
        self._writer = None
        self._reader = None
        self._opened: asyncio.Future | None = None
        self._next_seq = 0
        self._early: dict[int, bytes] = {}  # frames that overtook an earlier one (Ray does not order async calls)

    async def _open(self):
        if self._opened is None:
            self._opened = asyncio.ensure_future(asyncio.open_unix_connection(sock=self._ours))
        self._reader, self._writer = await self._opened

    async def where(self) -> dict:
        import ray

        ctx = ray.get_runtime_context()
        return {"node_id": ctx.get_node_id(), "host": socket.gethostname(), "pid": os.getpid(),
                "node_ip": ray.util.get_node_ip_address()}  # fmt: skip

    async def push(self, seq: int, data: bytes) -> None:
        """One client frame; frames go to the core in sequence order whatever order the calls run in."""
        await self._open()
        self._early[seq] = data
        while self._next_seq in self._early:
            self._writer.write(self._early.pop(self._next_seq))
            self._next_seq += 1
        with contextlib.suppress(ConnectionError):
            await self._writer.drain()

    async def outputs(self):
        """The core's frames as they come (a streaming generator); ends when the core stops."""
        await self._open()
        while data := await self._reader.read(_CHUNK):
            yield data


_ACTOR_CLASS = None


def _actor_class():
    global _ACTOR_CLASS
    if _ACTOR_CLASS is None:
        import ray

        _ACTOR_CLASS = ray.remote(EngineReplicaActor)
    return _ACTOR_CLASS


def keep_on_loopback() -> None:
    """Makes Ray started from this process (and its child processes) bind every node to 127.0.0.1: by
    default Ray binds to the machine's outward address even for a local instance. Ray reads the switch
    when it is imported, so this also sets the constant of an already imported Ray."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    from ray._private import ray_constants

    ray_constants.ENABLE_RAY_CLUSTER = False


def connect(address: str | None, *, num_cpus: int | None = None) -> dict:
    """ray.init once per process: join `address` (auto, HOST:PORT, ray://...) or start a local Ray on
    127.0.0.1 for this process alone. Returns the cluster's total resources."""
    import ray

    if not ray.is_initialized():
        kwargs: dict = {"ignore_reinit_error": True, "log_to_driver": False}
        if address is None:
            keep_on_loopback()
            kwargs.update(include_dashboard=False, num_cpus=num_cpus)
        ray.init(address=address, **kwargs)
    return ray.cluster_resources()


class RayCoreTransport:
    """The client end of a replica actor, shaped like engine.core_client.CoreClient (send, recv, kill, close)."""

    def __init__(self, actor, ready: CoreReady, reader: asyncio.StreamReader, pump: asyncio.Task,
                 where: dict) -> None:  # fmt: skip
        self.actor, self.ready, self._reader, self._pump = actor, ready, reader, pump
        self.where = where
        self._seq = 0
        self._killed = False

    @classmethod
    async def start(cls, config: EngineConfig, *, num_cpus: float, num_gpus: float = 0.0, name: str | None = None,
                    placement_timeout_s: float = 600.0) -> RayCoreTransport:  # fmt: skip
        import ray

        available = await asyncio.to_thread(ray.available_resources)
        if available.get("CPU", 0.0) + 1e-9 < num_cpus or available.get("GPU", 0.0) + 1e-9 < num_gpus:
            raise ReplicaUnplaceable(f"the Ray cluster has {available.get('CPU', 0.0):g} CPUs and "
                                     f"{available.get('GPU', 0.0):g} GPUs free; a replica needs {num_cpus:g} CPUs"
                                     + (f" and {num_gpus:g} GPUs" if num_gpus else ""))  # fmt: skip
        options: dict = {"num_cpus": num_cpus, "num_gpus": num_gpus, "max_restarts": 0, "max_concurrency": 64}
        if name is not None:
            options["name"] = name
        actor = _actor_class().options(**options).remote(config)
        try:
            where = await asyncio.wait_for(_await_ref(actor.where.remote()), placement_timeout_s)
        except TimeoutError:
            ray.kill(actor, no_restart=True)
            raise ReplicaUnplaceable(f"Ray did not place the replica within {placement_timeout_s:g} s "
                                     f"(it asks for {num_cpus:g} CPUs, {num_gpus:g} GPUs)") from None  # fmt: skip
        reader = asyncio.StreamReader(limit=2**31)
        pump = asyncio.create_task(_pump(actor.outputs.options(num_returns="streaming").remote(), reader))
        message = await read_core_message(reader)
        if not isinstance(message, CoreReady):
            ray.kill(actor, no_restart=True)
            pump.cancel()
            if isinstance(message, CoreFailed):
                raise ValueError(message.message)
            raise RuntimeError("the engine replica actor exited while loading the model")
        return cls(actor, message, reader, pump, where)

    @property
    def location(self) -> str:
        return f"{self.where['node_ip']}/{self.where['node_id'][:8]}"

    @property
    def is_alive(self) -> bool:
        return not self._killed and not self._pump.done()

    def kill(self) -> None:
        """Ends a replica that no longer answers (or that a test kills): the actor goes, its stream ends."""
        import ray

        self._killed = True
        with contextlib.suppress(Exception):
            ray.kill(self.actor, no_restart=True)

    def send(self, message) -> None:
        """Queues a frame for the actor without waiting (ordered by the actor, see `push`)."""
        if self._killed or self._pump.done():
            return
        seq, self._seq = self._seq, self._seq + 1
        self.actor.push.remote(seq, frame(message))

    async def recv(self):
        return await read_core_message(self._reader)

    async def close(self, timeout: float = 10.0) -> None:
        self.send(Shutdown())
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(self._pump), timeout)
        self.kill()
        self._pump.cancel()


async def _await_ref(ref):
    return await ref


async def _pump(generator, reader: asyncio.StreamReader) -> None:
    """Feeds the actor's output chunks into `reader`; EOF when the actor ends or dies."""
    try:
        async for ref in generator:
            reader.feed_data(await ref)
    except Exception as exc:  # RayActorError and friends: the replica is gone
        log.warning("engine replica stream ended: %s", type(exc).__name__)
    finally:
        reader.feed_eof()


class RayEngine(AsyncLLM):
    """An engine replica on Ray: AsyncLLM (tokenizer, output processing, admission) over a Ray actor."""

    location: str = "?"

    @classmethod
    async def start(cls, config: EngineConfig, *, num_cpus: float | None = None, num_gpus: float | None = None,
                    name: str | None = None, placement_timeout_s: float = 600.0) -> RayEngine:  # fmt: skip
        """Places a replica in the connected Ray cluster (see `connect`) and waits until its model is
        loaded; ReplicaUnplaceable when the cluster lacks what it asks for, ValueError for a bad model."""
        files = await asyncio.to_thread(resolve_model, config.model, config.cache_dir)
        tokenizer = await asyncio.to_thread(load_tokenizer, files.folder)
        if num_gpus is None:
            num_gpus = 1.0 if (config.device or "").startswith("cuda") else 0.0
        if num_cpus is None:
            num_cpus = float(config.num_threads or 1)
        started = time.monotonic()
        transport = await RayCoreTransport.start(dataclasses.replace(config), num_cpus=num_cpus, num_gpus=num_gpus,
                                                 name=name, placement_timeout_s=placement_timeout_s)  # fmt: skip
        llm = cls(transport, tokenizer)
        llm.location = transport.location
        log.info("engine replica on %s ready in %.1f s", llm.location, time.monotonic() - started)
        return llm
