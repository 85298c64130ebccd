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
from engine.spec.cost_model import StepCost
from engine.spec.policy import MAX_AUTO_TOKENS
from schemas.engine import SamplingParams

log = logging.getLogger(__name__)
_ID = "__spec_cost__"


def _run_once(runner, kv: KVCacheManager, num_tokens: int, vocab_size: int, context: int = 0) -> float:
    """One verify-shaped step: num_tokens query tokens after `context` cached ones (their KV
    is whatever the blocks hold: the timing does not depend on it)."""
    token_ids = [(7 + 31 * i) % vocab_size for i in range(context + num_tokens)]
    if kv.allocate(_ID, token_ids, 0, context + num_tokens) is None:
        raise ValueError("no room in the KV pool")
    new = NewRequestData(_ID, token_ids[: context + 1], context + 1, list(kv.block_ids(_ID)), SamplingParams(temperature=0.0))
    # Every token but the first is a "draft": one logits row per token, as a verify step has.
    drafts = token_ids[context + 1 :]
    plan = SchedulerOutput(req_ids=[_ID], num_scheduled_tokens=[num_tokens], num_computed_tokens=[context], new_reqs=[new],
                           spec_token_ids={_ID: drafts} if drafts else {})  # fmt: skip
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


def measure_step_cost(runner, kv: KVCacheManager, vocab_size: int, max_tokens: int, context: int, repeats: int = 3,
                      dense: int = MAX_AUTO_TOKENS + 1) -> StepCost:  # fmt: skip
    """The fastest of `repeats` runs at each of `step_sizes` (those the pool has room for), the
    tokens attending to `context` earlier ones (decode steps attend to a whole request: a step
    timed from position 0 underprices attention). The sizes take turns, so a burst of load
    from other processes does not land on one size only."""
    slots = runner.slots
    room = min(kv.num_blocks * kv.block_size, slots.token_ids.shape[1] - 1, slots.block_table.shape[1] * kv.block_size)
    context = max(0, min(context, room - max_tokens))
    sizes = [n for n in step_sizes(max_tokens, dense) if context + n <= room]
    _run_once(runner, kv, 1, vocab_size, context)  # warm-up
    seconds = [float("inf")] * len(sizes)
    for _ in range(repeats):
        for i, n in enumerate(sizes):
            seconds[i] = min(seconds[i], _run_once(runner, kv, n, vocab_size, context))
    kv.reset_prefix_cache()
    seconds = [max(seconds[: i + 1]) for i in range(len(seconds))]  # more tokens never cost less
    log.info("speculative: step cost at context %d: %s", context, ", ".join(f"{n}: {s * 1e3:.1f} ms" for n, s in zip(sizes, seconds)))
    return StepCost(sizes, seconds)
