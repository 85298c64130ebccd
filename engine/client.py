"""The interface every engine client offers a server (AsyncLLM, and the gateway tests' fake).

A request enters in one round trip: `submit` sends it, the engine validates it and compiles
its output constraint once, and answers accepted (a `RequestStream` of deltas) or refused (a
`RequestRefused` naming the field) before the caller has promised the client anything.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol

from engine.outputs import RequestOutput
from schemas.engine import EngineStats, ModelInfo, SamplingParams


class RequestRefused(ValueError):
    """The engine will not serve the request; the message is "<field>: <why>" (engine field names:
    SamplingParams', `prompt`, or `structured` for the output constraint)."""

    @property
    def field(self) -> str:
        return str(self).split(":", 1)[0]

    @property
    def reason(self) -> str:
        return str(self).split(":", 1)[-1].strip()


class EngineDeadError(RuntimeError):
    """The engine core died; requests in flight on it are lost."""


class RequestStream(Protocol):
    """An accepted request's deltas; `aclose` (idempotent) aborts it in the engine if unfinished."""

    def __aiter__(self) -> AsyncIterator[RequestOutput]: ...

    async def __anext__(self) -> RequestOutput: ...

    async def aclose(self) -> None: ...


class EngineClient(Protocol):
    """One engine core as a server sees it (see engine.async_llm.AsyncLLM)."""

    tokenizer: Any
    model_info: ModelInfo
    stats: EngineStats
    last_heard: float | None  # time.monotonic() of the core's last message; None: no heartbeat to watch

    @property
    def is_alive(self) -> bool: ...

    @property
    def num_inflight(self) -> int: ...

    async def submit(self, request_id: str, prompt_token_ids: list[int], params: SamplingParams) -> RequestStream:
        """Raises RequestRefused, or EngineDeadError when the core is not running."""
        ...

    async def abort(self, request_id: str) -> None: ...

    def kill(self, reason: str) -> None: ...

    async def start_profile(self) -> None: ...

    async def stop_profile(self, path: str) -> str: ...

    async def reset_prefix_cache(self) -> None: ...

    async def shutdown(self) -> None: ...
