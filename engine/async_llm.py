"""The async engine client for servers: generate() streams text deltas from an engine core.

Owns the tokenizer and the output processor (detokenization, stop strings) on the
caller's event loop; the engine core runs in its own process (or a thread for tests),
so the event loop never waits on the model.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator

from engine.client import EngineDeadError, RequestRefused
from engine.config import EngineConfig
from engine.core_client import CoreClient
from engine.loader import resolve_model
from engine.output_processor import OutputProcessor
from engine.outputs import RequestOutput
from engine.tokenizer import load_tokenizer
from schemas.engine import (
    AbortRequests,
    AddRequest,
    EngineRequest,
    EngineStats,
    Heartbeat,
    ModelInfo,
    ProfileResult,
    ResetPrefixCache,
    SamplingParams,
    StartProfile,
    StepOutputs,
    StopProfile,
)

_ACCEPTED = object()  # queued for a request when the core has admitted it


class _Stream:
    """An admitted request's deltas from its queue; closing it early aborts the request in the core."""

    def __init__(self, llm: AsyncLLM, request_id: str, queue: asyncio.Queue) -> None:
        self._llm, self._request_id, self._queue = llm, request_id, queue
        self._done = False

    def __aiter__(self) -> _Stream:
        return self

    async def __anext__(self) -> RequestOutput:
        if self._done:
            raise StopAsyncIteration
        item = await self._queue.get()
        if isinstance(item, Exception):
            await self._finish(True)
            raise item
        if item.error:
            await self._finish(True)
            raise ValueError(item.error)
        if item.finished:
            await self._finish(True)
        return item

    async def _finish(self, ended: bool) -> None:
        if not self._done:
            self._done = True
            self._llm._release(self._request_id, abort=not ended)

    async def aclose(self) -> None:
        await self._finish(False)


class AsyncLLM:
    """One engine core behind an asyncio interface; create with `await AsyncLLM.start(config)`."""

    def __init__(self, client: CoreClient, tokenizer) -> None:
        self.client = client
        self.tokenizer = tokenizer
        self.model_info: ModelInfo = client.ready.info
        num_blocks = self.model_info.num_total_blocks
        self.stats = EngineStats(num_total_blocks=num_blocks, num_free_blocks=num_blocks)
        self._processor = OutputProcessor(tokenizer)
        self._queues: dict[str, asyncio.Queue] = {}
        self._dead = False
        self._death = "the engine core stopped"  # what requests in flight are told when it dies
        self.last_heard = time.monotonic()  # when the core last sent anything (a heartbeat at least)
        self._profile_reply: asyncio.Future | None = None
        self._reader = asyncio.create_task(self._read_loop())

    @classmethod
    async def start(cls, config: EngineConfig, in_process: bool = False) -> AsyncLLM:
        files = await asyncio.to_thread(resolve_model, config.model, config.cache_dir)  # converts a GGUF once
        tokenizer = await asyncio.to_thread(load_tokenizer, files.folder)
        client = await CoreClient.start(dataclasses.replace(config), in_process=in_process)
        return cls(client, tokenizer)

    @property
    def is_alive(self) -> bool:
        return not self._dead and self.client.is_alive

    @property
    def num_inflight(self) -> int:
        return len(self._queues)

    async def _read_loop(self) -> None:
        while (message := await self.client.recv()) is not None:
            self.last_heard = time.monotonic()
            if isinstance(message, Heartbeat):
                continue
            if isinstance(message, ProfileResult) and self._profile_reply and not self._profile_reply.done():
                self._profile_reply.set_result(message)
            if not isinstance(message, StepOutputs):
                continue
            self.stats = message.stats
            for request_id in message.accepted:
                if (queue := self._queues.get(request_id)) is not None:
                    queue.put_nowait(_ACCEPTED)
            for out in message.outputs:
                queue = self._queues.get(out.request_id)
                if queue is None or out.request_id not in self._processor:
                    continue
                delta, stopped_here = self._processor.process(out)
                if stopped_here:
                    self.client.send(AbortRequests([out.request_id]))
                queue.put_nowait(delta)
        self._dead = True
        for queue in self._queues.values():
            queue.put_nowait(EngineDeadError(self._death))
        if self._profile_reply is not None and not self._profile_reply.done():
            self._profile_reply.set_exception(EngineDeadError(self._death))

    async def submit(self, request_id: str, prompt_token_ids: list[int], params: SamplingParams) -> _Stream:
        """Sends the request and waits for the core's answer: its stream of deltas once accepted;
        RequestRefused ("<field>: ...") when the core's validation or grammar compile refuses it."""
        if not self.is_alive:
            raise EngineDeadError("the engine core is not running")
        if request_id in self._queues:
            raise RequestRefused(f"request_id: {request_id!r} is already in flight")
        queue: asyncio.Queue = asyncio.Queue()
        self._queues[request_id] = queue
        self._processor.add(request_id, prompt_token_ids, params)
        self.client.send(AddRequest(EngineRequest(request_id=request_id, prompt_token_ids=prompt_token_ids, params=params)))
        try:
            answer = await queue.get()
        except BaseException:  # cancelled while waiting: the request must not stay in the core
            self._release(request_id, abort=True)
            raise
        if answer is _ACCEPTED:
            return _Stream(self, request_id, queue)
        self._release(request_id, abort=False)
        if isinstance(answer, Exception):
            raise answer
        raise RequestRefused(answer.error or "request: refused by the engine")

    def _release(self, request_id: str, abort: bool) -> None:
        self._queues.pop(request_id, None)
        if request_id in self._processor:
            self._processor.remove(request_id)
        if abort:
            self.client.send(AbortRequests([request_id]))

    async def generate(self, request_id: str, prompt_token_ids: list[int], params: SamplingParams
                       ) -> AsyncIterator[RequestOutput]:  # fmt: skip
        """`submit`, then the deltas until the request finishes; closing early aborts it in the core."""
        stream = await self.submit(request_id, prompt_token_ids, params)
        try:
            async for out in stream:
                yield out
        finally:
            await stream.aclose()

    def kill(self, reason: str) -> None:
        """Ends a core that hangs; its requests in flight fail with EngineDeadError(reason). Called by the supervisor."""
        self._death = reason
        self.client.kill()

    async def abort(self, request_id: str) -> None:
        self.client.send(AbortRequests([request_id]))

    async def start_profile(self) -> None:
        """Starts torch's profiler in the core; RuntimeError when it runs already."""
        await self._profile_call(StartProfile())

    async def stop_profile(self, path: str) -> str:
        """Stops the profiler; the core writes its Chrome trace to `path` and this returns it."""
        return (await self._profile_call(StopProfile(path))).path or path

    async def _profile_call(self, message: StartProfile | StopProfile) -> ProfileResult:
        if self._profile_reply is not None:
            raise RuntimeError("another profiler call is in flight")
        self._profile_reply = asyncio.get_running_loop().create_future()
        try:
            self.client.send(message)
            result = await self._profile_reply
        finally:
            self._profile_reply = None
        if result.error:
            raise RuntimeError(result.error)
        return result

    async def reset_prefix_cache(self) -> None:
        self.client.send(ResetPrefixCache())

    async def shutdown(self) -> None:
        await self.client.close()
        self._reader.cancel()
        try:
            await self._reader
        except asyncio.CancelledError:
            pass
