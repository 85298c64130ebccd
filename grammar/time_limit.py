"""A per-thread time limit on grammar compiles.

Python threads cannot be stopped from outside, so a compile that runs past its limit would
keep its worker thread (and every compile queued behind it) busy. Instead the compiler's
loops call `check_time_limit()`, and a compile past the limit set by `time_limit` raises
GrammarError and frees its thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from grammar.errors import GrammarError

_local = threading.local()


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Compiles on this thread inside the block raise GrammarError once `seconds` have passed."""
    previous = getattr(_local, "limit", None)
    _local.limit = None if seconds is None else (time.monotonic() + seconds, seconds)
    try:
        yield
    finally:
        _local.limit = previous


def check_time_limit() -> None:
    limit = getattr(_local, "limit", None)
    if limit is not None and time.monotonic() > limit[0]:
        raise GrammarError(f"grammar compilation exceeded the limit of {limit[1]:g} s")
