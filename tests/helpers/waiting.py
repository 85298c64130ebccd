"""Waiting on events instead of on time: poll a condition to a generous deadline, freeze processes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

T = TypeVar("T")


async def wait_for(probe: Callable[[], Awaitable[T]], timeout_s: float = 120.0, interval_s: float = 0.05) -> T:
    """Polls the async `probe` until it returns something truthy and returns that; AssertionError at
    the deadline. The deadline is a safety net for a broken server, not a guess at how fast a
    machine is: keep it generous so that a loaded machine only makes the test slower."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not (value := await probe()):
        assert loop.time() < deadline, f"{getattr(probe, '__name__', probe)} did not hold within {timeout_s} s"
        await asyncio.sleep(interval_s)
    return value


@contextlib.contextmanager
def frozen(*pids: int) -> Iterator[None]:
    """SIGSTOPs the processes for the block and SIGCONTs those still alive after it: a frozen engine
    core takes requests into its socket but neither admits nor finishes any, so a test can line up
    work in a known state without racing the core's speed. The server under test needs an
    `--engine-heartbeat-timeout` longer than the block, or its supervisor kills the frozen core."""
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


async def wait_until(condition: Callable[[], object], timeout_s: float = 120.0) -> None:
    """`wait_for` of a plain (not async) condition, such as a fake engine's counters."""

    async def holds() -> object:
        return condition()

    await wait_for(holds, timeout_s, interval_s=0.005)
