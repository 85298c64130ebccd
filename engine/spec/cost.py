"""Measures what one forward pass costs by its number of tokens, for the dynamic speculation policy.

Run once at start-up, before any request, through the runner's own `execute` (gather,
forward, logits of every token, sampling), on blocks of the engine's pool that are free then;
the prefix-cache entries it leaves are dropped after.
"""

from __future__ import annotations

import logging
import time

from engine.kv_cache import KVCacheManager
from engine.scheduler import NewRequestData, SchedulerOutput
from engine.spec.policy import MAX_AUTO_TOKENS, StepCost
from schemas.engine import SamplingParams

log = logging.getLogger(__name__)
_ID = "__spec_cost__"


def _run_once(runner, kv: KVCacheManager, num_tokens: int, vocab_size: int) -> float:
    token_ids = [(7 + 31 * i) % vocab_size for i in range(num_tokens)]
    if kv.allocate(_ID, token_ids, 0, num_tokens) is None:
        raise ValueError("no room in the KV pool")
    new = NewRequestData(_ID, token_ids[:1], 1, list(kv.block_ids(_ID)), SamplingParams(temperature=0.0))
    # Every token but the first is a "draft": one logits row per token, as a verify step has.
    plan = SchedulerOutput(req_ids=[_ID], num_scheduled_tokens=[num_tokens], num_computed_tokens=[0], new_reqs=[new],
                           spec_token_ids={_ID: token_ids[1:]} if num_tokens > 1 else {})  # fmt: skip
    start = time.perf_counter()
    runner.execute(plan)
    elapsed = time.perf_counter() - start
    kv.free(_ID)
    runner.execute(SchedulerOutput(freed_req_ids=[_ID]))
    return elapsed


def step_sizes(max_tokens: int, dense: int) -> list[int]:
    """Every size up to `dense` (where the C linears change kernels with the row count, so
    costs are not linear there), then powers of two up to max_tokens."""
    sizes = list(range(1, min(dense, max_tokens) + 1))
    n = 16
    while n <= max_tokens:
        if n > dense:
            sizes.append(n)
        n *= 2
    return sizes


def measure_step_cost(runner, kv: KVCacheManager, vocab_size: int, max_tokens: int, repeats: int = 3,
                      dense: int = MAX_AUTO_TOKENS + 1) -> StepCost:  # fmt: skip
    """The fastest of `repeats` runs at each of `step_sizes` (those the pool has room for).
    The sizes take turns, so a burst of load from other processes does not land on one size only."""
    sizes = [n for n in step_sizes(max_tokens, dense) if n <= kv.num_blocks * kv.block_size]
    _run_once(runner, kv, 1, vocab_size)  # warm-up
    seconds = [float("inf")] * len(sizes)
    for _ in range(repeats):
        for i, n in enumerate(sizes):
            seconds[i] = min(seconds[i], _run_once(runner, kv, n, vocab_size))
    kv.reset_prefix_cache()
    seconds = [max(seconds[: i + 1]) for i in range(len(seconds))]  # more tokens never cost less
    log.info("speculative: step cost %s", ", ".join(f"{n}: {s * 1e3:.1f} ms" for n, s in zip(sizes, seconds)))
    return StepCost(sizes, seconds)
