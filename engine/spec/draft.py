"""A draft model inside the engine: its own runner (slots, KV tensors) and block pool, run greedily k steps ahead.

Each request's draft context is a list of token ids in the draft's vocabulary (the target's
own tokens for a same-vocabulary draft, re-tokenized text for TLI). Between proposals the
context changes at its tail (the target accepted some drafts, rejected the rest, added one):
the draft keeps the KV of the longest common prefix and recomputes from there. A request
the target preempts or ends loses its draft state (`remove`); the next proposal rebuilds it.
"""

from __future__ import annotations

import torch

from engine.kv_cache import KVCacheManager
from engine.runner import ModelRunner
from engine.scheduler import NewRequestData, SchedulerOutput
from schemas.engine import SamplingParams

_GREEDY = SamplingParams(max_tokens=None, temperature=0.0)


def common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class DraftModel:
    """Owned by the Speculator; `propose` is called once per engine step with the requests that draft."""

    def __init__(self, model, num_blocks: int, block_size: int, max_num_seqs: int, max_model_len: int,
                 device: torch.device, kv_dtype: torch.dtype, use_cpu_kernels: bool) -> None:  # fmt: skip
        self.kv = KVCacheManager(num_blocks, block_size, enable_prefix_caching=False)  # contexts get rewritten
        self.runner = ModelRunner(model, num_blocks, block_size, max_num_seqs, max_model_len, [], device, kv_dtype,
                                  use_cpu_kernels)  # fmt: skip
        self.max_model_len = max_model_len
        self.vocab_size = model.vocab_size
        self.num_computed: dict[str, int] = {}
        self._freed: list[str] = []

    def remove(self, request_id: str) -> None:
        if self.num_computed.pop(request_id, None) is not None:
            self.kv.free(request_id)
            self._freed.append(request_id)

    def _prepare(self, plan: SchedulerOutput, request_id: str, context: list[int], num_tokens: int) -> bool:
        """Adds the request's catch-up run (from its first stale token to the context's end) to the plan."""
        if len(context) + num_tokens > self.max_model_len or not context:
            return False
        slots = self.runner.slots
        computed = self.num_computed.get(request_id)
        if computed is not None:
            slot = slots.slot_of[request_id]
            keep = common_prefix(slots.token_lists[slot], context)
            computed = min(computed, keep, len(context) - 1)
            slots.set_tokens(slot, context, keep)
        else:
            computed = 0
        new_ids = self.kv.allocate(request_id, context, computed, len(context) - computed + num_tokens - 1)
        if new_ids is None:  # the draft's pool is full: no proposal for this request now
            self.remove(request_id)
            return False
        if request_id not in self.num_computed:
            plan.new_reqs.append(NewRequestData(request_id, list(context), len(context), list(self.kv.block_ids(request_id)), _GREEDY))
        else:
            plan.new_block_ids[request_id] = new_ids
        plan.req_ids.append(request_id)
        plan.num_scheduled_tokens.append(len(context) - computed)
        plan.num_computed_tokens.append(computed)
        self.num_computed[request_id] = computed
        return True

    def propose(self, contexts: dict[str, list[int]], num_tokens: dict[str, int]) -> dict[str, list[int]]:
        """Runs the draft greedily num_tokens[r] steps past contexts[r]; returns the drafted ids."""
        plan = SchedulerOutput(freed_req_ids=self._freed)
        self._freed = []
        for request_id, context in contexts.items():
            self._prepare(plan, request_id, context, num_tokens[request_id])
        drafted: dict[str, list[int]] = {r: [] for r in plan.req_ids}
        depth = 0
        while plan.req_ids or plan.freed_req_ids:
            result = self.runner.execute(plan)
            nxt = SchedulerOutput()
            depth += 1
            for request_id, num_new, computed in zip(plan.req_ids, plan.num_scheduled_tokens, plan.num_computed_tokens):
                drafted[request_id] += result.token_ids[request_id]
                self.num_computed[request_id] = computed + num_new
                if depth < num_tokens[request_id]:
                    nxt.req_ids.append(request_id)
                    nxt.num_scheduled_tokens.append(1)
                    nxt.num_computed_tokens.append(computed + num_new)
            plan = nxt
        return drafted
