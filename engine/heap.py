"""The startup heap, kept out of the garbage collector's full passes.

A loaded engine core holds ~300,000 Python objects (tokenizer, model modules, grammar tables) that
live as long as the process. Python's full (generation 2) collection walks every one of them:
138 ms on the 2-vCPU Zen 4, during which the process stops and every decoding stream with it,
once every few minutes of serving (measured in a `benchmarks/serve.py` run at 16 and 64 streams).
So once a process is up, one collection clears the startup garbage and `gc.freeze` moves what
is left to the permanent generation: later passes walk only objects made since.
"""

from __future__ import annotations

import gc
import time


def freeze_startup_heap() -> str:
    """Collects once, freezes every object still alive; returns a phrase for the startup log."""
    started = time.perf_counter()
    gc.collect()
    took = time.perf_counter() - started
    gc.freeze()
    return f"{gc.get_freeze_count():,} startup objects kept out of full GC passes (one took {took * 1e3:.0f} ms)"
