"""The scheduler: which requests run how many tokens this step, within the token budget.

Pure Python. Running requests are served first (decodes and unfinished prefill chunks);
waiting requests are admitted while the budget, `max_num_seqs` and the block pool allow: FCFS.
With the pacer (once it has learned the step costs) decodes go first, then prompt tokens go to
the running prompts and the waiting requests together, the prompt that would finish soonest
first, aged by its wait (`_prompt_order`).
While any request is decoding, prompt tokens (chunks and admissions) get what the pacer
allows (engine/prefill_pacing.py: at most a set multiple of the decode rows' own cost, learned
from the steps) or, without one, at most `max_prefill_tokens_while_decoding` of a step,
so that a long prefill never holds every decoding stream for a whole large step; with nobody
decoding they get the whole budget, or with the pacer about half a second of it (a request
arriving meanwhile is not held for a 2,048-token step).
When blocks run out, the most recently admitted running request is preempted by recompute:
its blocks are freed and it goes back to the front of the queue.
A decoding request's draft tokens (speculative decoding) are scheduled after its last known
token when the budget and the pool allow, else dropped for the step; after the step the
rejected ones are taken back out of its computed tokens.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from engine.kv_cache import KVCacheManager
from engine.prefill_pacing import PrefillPacer
from engine.request import Request, Status


ADMIT_WINDOW = 64  # waiting requests the admission order looks at (a bounded cost per step)
# The prompt order (`_prompt_order`): prompts whose remaining prefill lies in the same
# PROMPT_CLASS_SECONDS slice are served first come, first served; a prompt in a longer slice
# yields to shorter ones, and its wait counts 1 / PROMPT_AGING against its length, so it is passed
# over for at most PROMPT_AGING times the difference. Sixteen agents starting at once
# (benchmarks/agent_workload.py, the 2-vCPU Zen 4): ranked by length less the whole wait, the cold
# 1,500-token prompts (2.5 s of prefill each) outranked every agent's next turn (120 new tokens)
# within seconds and the second turns waited 20-36 s for the last of them; with the slices and
# aging at 30 the agents' TTFT p50 went 2.9 -> 1.6 s, later turns 1.7 -> 1.0 s, at the cost of the
# cold first turns (p50 22 -> 34 s); benchmarks/serve.py's ~200-token prompts, all in the first
# slice, keep their arrival order.
PROMPT_CLASS_SECONDS = 0.5
PROMPT_AGING = 30.0


@dataclass(slots=True)
class NewRequestData:
    """A request entering the runner: new, or resumed after preemption (all its known tokens)."""

    request_id: str
    token_ids: list[int]
    num_prompt_tokens: int
    block_ids: list[int]
    params: object  # SamplingParams


@dataclass(slots=True)
class SchedulerOutput:
    """The plan of one step, in batch order."""

    req_ids: list[str] = field(default_factory=list)
    num_scheduled_tokens: list[int] = field(default_factory=list)
    num_computed_tokens: list[int] = field(default_factory=list)  # before this step
    new_reqs: list[NewRequestData] = field(default_factory=list)
    new_block_ids: dict[str, list[int]] = field(default_factory=dict)  # running reqs' added blocks
    freed_req_ids: list[str] = field(default_factory=list)  # finished, aborted or preempted
    # draft tokens to verify, run after the request's known tokens (counted in num_scheduled_tokens)
    spec_token_ids: dict[str, list[int]] = field(default_factory=dict)
    # the step's tokens by kind, for what a step costs: rows that run only their last known token
    # (and its drafts) decode; every other scheduled token is a prompt (or recomputed) token
    num_decode_tokens: int = 0
    num_prefill_tokens: int = 0


@dataclass(slots=True)
class Progress:
    """What one step gave one request: the tokens appended (cut at a stop) and its drafts' fate."""

    request: Request
    token_ids: list[int]
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0


class Scheduler:
    """Owns the waiting and running queues; called by the engine core once per step."""

    def __init__(self, kv: KVCacheManager, max_num_seqs: int, max_num_batched_tokens: int, max_model_len: int,
                 max_prefill_tokens_while_decoding: int | None = None, pacer: PrefillPacer | None = None):  # fmt: skip
        self.kv = kv
        self.pacer = pacer  # when set, it decides the prompt tokens of a step while others decode
        self.max_num_seqs = max_num_seqs
        self.max_num_batched_tokens = max_num_batched_tokens
        self.max_prefill_tokens_while_decoding = max_prefill_tokens_while_decoding
        self.max_model_len = max_model_len
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []
        self.requests: dict[str, Request] = {}
        self.freed_req_ids: list[str] = []
        self.num_preemptions = 0
        self.num_draft_tokens = 0  # speculative decoding: drafts verified, accepted, verify rounds
        self.num_accepted_tokens = 0
        self.num_spec_rounds = 0

    def add(self, request: Request) -> None:
        self.requests[request.request_id] = request
        self.waiting.append(request)

    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    def finish(self, request: Request, reason: str) -> None:
        """Ends a request (stop, length, abort), freeing its blocks; idempotent."""
        if request.status is Status.FINISHED:
            return
        if request.status is Status.RUNNING:
            self.running.remove(request)
        else:
            self.waiting.remove(request)
        request.status = Status.FINISHED
        request.finish_reason = request.finish_reason or reason
        self.kv.free(request.request_id)
        self.requests.pop(request.request_id, None)
        self.freed_req_ids.append(request.request_id)

    def _preempt(self, request: Request) -> None:
        self.running.remove(request)
        self.kv.free(request.request_id)
        request.status = Status.WAITING
        request.num_computed_tokens = 0
        request.spec_token_ids = []
        request.num_preemptions += 1
        self.num_preemptions += 1
        self.waiting.appendleft(request)
        self.freed_req_ids.append(request.request_id)

    def _num_new(self, request: Request, budget: int) -> int:
        return min(request.num_tokens - request.num_computed_tokens, budget)

    def _prefill_budget(self) -> int:
        """Prompt tokens this step may take: capped (or paced) while any running request decodes."""
        cap = self.max_prefill_tokens_while_decoding
        if cap is None and self.pacer is None:
            return self.max_num_batched_tokens
        num_decoding = sum(r.num_computed_tokens >= r.num_prompt_tokens for r in self.running)
        if not num_decoding:
            idle = self.pacer.idle_budget() if self.pacer is not None else None
            return self.max_num_batched_tokens if idle is None else min(idle, self.max_num_batched_tokens)
        if self.pacer is not None:
            num_waiting = len(self.waiting) + len(self.running) - num_decoding  # no first token yet
            return min(self.pacer.budget(num_decoding, num_waiting), self.max_num_batched_tokens)
        return cap

    def _spec_ids(self, request: Request, num_new: int, budget: int) -> list[int]:
        """The drafts that fit this step: only after a run that reaches the last known token."""
        if not request.spec_token_ids or request.num_computed_tokens + num_new != request.num_tokens:
            return []
        return request.spec_token_ids[: budget - num_new]

    def _allocate(self, request: Request, num_new: int, spec: list[int]) -> tuple[list[int] | None, list[int]]:
        """(new blocks, drafts) for the known tokens and the drafts, or for the known tokens
        alone when the pool is short of the drafts' blocks; (None, []) when short of both."""
        args = (request.request_id, request.all_token_ids, request.num_computed_tokens)
        new_ids = self.kv.allocate(*args, num_new + len(spec))
        if new_ids is None and spec:
            spec = []
            new_ids = self.kv.allocate(*args, num_new)
        return new_ids, spec

    def schedule(self) -> SchedulerOutput:
        out = SchedulerOutput()
        budget = self.max_num_batched_tokens
        prefill_budget = self._prefill_budget()
        ranked = self.pacer is not None and self.pacer.learned
        preempted = False
        scheduled: list[tuple[Request, int]] = []
        held: list[Request] = []  # running requests still in their prompt: served with the waiting ones (ranked)
        for request in list(self.running):
            if request.status is not Status.RUNNING or budget == 0:
                continue
            prefilling = request.num_computed_tokens < request.num_prompt_tokens
            if prefilling and ranked:
                held.append(request)
                continue
            if prefilling and prefill_budget == 0:
                continue
            budget, prefill_budget, hit = self._run(out, scheduled, request, prefilling, budget, prefill_budget)
            preempted |= hit
        if ranked:
            budget = self._serve_prompts(out, scheduled, held, budget, prefill_budget, preempted)
        elif not preempted:
            budget = self._admit(out, scheduled, min(budget, prefill_budget))
        # Requests preempted after being scheduled in this loop must not run.
        for request, num_new in scheduled:
            if request.status is Status.RUNNING:
                out.req_ids.append(request.request_id)
                out.num_scheduled_tokens.append(num_new)
                out.num_computed_tokens.append(request.num_computed_tokens)
                if request.num_computed_tokens + 1 == request.num_tokens:
                    out.num_decode_tokens += num_new
                else:
                    out.num_prefill_tokens += num_new
        out.freed_req_ids, self.freed_req_ids = self.freed_req_ids, []
        return out

    def _run(self, out: SchedulerOutput, scheduled: list, request: Request, prefilling: bool, budget: int,
             prefill_budget: int) -> tuple[int, int, bool]:  # fmt: skip
        """Schedules a running request's next tokens (a prompt chunk, or a decode and its drafts),
        preempting the latest admitted requests while the pool is short; (budget, prefill budget,
        whether it preempted)."""
        num_new = self._num_new(request, min(budget, prefill_budget) if prefilling else budget)
        spec = self._spec_ids(request, num_new, budget)
        new_ids, spec = self._allocate(request, num_new, spec)
        preempted = False
        while new_ids is None:
            victim = self.running[-1]
            self._preempt(victim)
            preempted = True
            if victim is request:
                break
            new_ids = self.kv.allocate(request.request_id, request.all_token_ids, request.num_computed_tokens, num_new)
        if request.status is not Status.RUNNING:
            return budget, prefill_budget, preempted
        scheduled.append((request, num_new + len(spec)))
        if spec:
            out.spec_token_ids[request.request_id] = spec
        out.new_block_ids[request.request_id] = new_ids
        return budget - num_new - len(spec), prefill_budget - num_new if prefilling else prefill_budget, preempted

    def _serve_prompts(self, out: SchedulerOutput, scheduled: list, held: list[Request], budget: int,
                       prefill_budget: int, preempted: bool) -> int:  # fmt: skip
        """Gives the step's prompt tokens to the running prompts and the waiting requests together,
        in `_prompt_order`: a short prompt (an agent's next turn, its prefix cached) does not wait
        behind a long one already under way. No admission after a preemption."""
        if budget <= 0 or prefill_budget <= 0:
            return budget  # (no order worked out: a prefix lookup per waiting request for nothing)
        admitting = not preempted and bool(self.waiting) and len(self.running) < self.max_num_seqs
        for request in self._prompt_order([r for r in held if r.status is Status.RUNNING], admitting):
            if budget <= 0 or prefill_budget <= 0:
                break
            if request.status is Status.RUNNING:
                budget, prefill_budget, preempted = self._run(out, scheduled, request, True, budget, prefill_budget)
                admitting = admitting and not preempted
            elif admitting and len(self.running) < self.max_num_seqs:
                taken = self._admit_one(out, scheduled, request, min(budget, prefill_budget))
                if taken is None:
                    admitting = False  # the pool is short: nobody else this step
                else:
                    budget, prefill_budget = budget - taken, prefill_budget - taken
        return budget

    def _prompt_order(self, held: list[Request], with_waiting: bool) -> list[Request]:
        """The order prompt tokens are served in (with the pacer, once learned): preempted requests
        (put back at the front of the queue) first, then the running prompts and the first
        ADMIT_WINDOW waiting ones by the least (uncached prompt tokens x the learned cost of a
        prompt token, rounded down to a PROMPT_CLASS_SECONDS slice, - seconds since arrival /
        PROMPT_AGING), then by arrival, then the rest of the queue: an agent's next turn, its
        prefix cached, does not wait behind fifteen cold 1,500-token prompts nor behind the one
        under way, and a long prompt is passed over for at most about PROMPT_AGING times the
        difference.
        The waiting queue is ranked only on a step that can admit (a prefix lookup each)."""
        order = list(self.waiting) if with_waiting else []
        cost, now = self.pacer.costs[2], time.time()
        resumed = [r for r in order if r.num_preemptions]
        window = [r for r in order[:ADMIT_WINDOW] if not r.num_preemptions] + held

        def key(request: Request) -> tuple[float, float]:
            done = (request.num_computed_tokens if request.status is Status.RUNNING
                    else self.kv.cached_prefix_len(request.request_id, request.all_token_ids))  # fmt: skip
            remaining = (request.num_tokens - done) * cost // PROMPT_CLASS_SECONDS * PROMPT_CLASS_SECONDS
            return remaining - (now - request.arrival_time) / PROMPT_AGING, request.arrival_time

        window.sort(key=key)
        return resumed + window + [r for r in order[ADMIT_WINDOW:] if not r.num_preemptions]

    def _admit(self, out: SchedulerOutput, scheduled: list, budget: int) -> int:
        """Admits waiting requests first come, first served while the budget, `max_num_seqs` and
        the pool allow."""
        if not self.waiting or budget <= 0 or len(self.running) >= self.max_num_seqs:
            return budget
        for request in list(self.waiting):  # (a copy: admitting removes from the queue)
            if budget <= 0 or len(self.running) >= self.max_num_seqs:
                break
            taken = self._admit_one(out, scheduled, request, budget)
            if taken is None:
                break
            budget -= taken
        return budget

    def _admit_one(self, out: SchedulerOutput, scheduled: list, request: Request, budget: int) -> int | None:
        """Moves one waiting request to running with its first chunk (after its cached prefix);
        the tokens it takes, or None (nothing changed) when the pool cannot hold the chunk."""
        if request.num_computed_tokens == 0 and request.prompt_logprobs is None:  # cached tokens get no logits
            request.num_computed_tokens = self.kv.find_cached_prefix(request.request_id, request.all_token_ids)
        num_new = self._num_new(request, budget)
        new_ids = self.kv.allocate(request.request_id, request.all_token_ids, request.num_computed_tokens, num_new)
        if new_ids is None:
            self.kv.free(request.request_id)
            request.num_computed_tokens = 0
            return None
        self.waiting.remove(request)
        if request.num_cached_tokens < 0:
            request.num_cached_tokens = request.num_computed_tokens
        request.status = Status.RUNNING
        self.running.append(request)
        scheduled.append((request, num_new))
        out.new_reqs.append(
            NewRequestData(
                request.request_id,
                list(request.all_token_ids),
                request.num_prompt_tokens,
                list(self.kv.block_ids(request.request_id)),
                request.params,
            )
        )
        return num_new

    def update(self, out: SchedulerOutput, sampled: dict[str, list[int]]) -> list[Progress]:
        """Absorbs one step's result: advances progress, appends sampled tokens (a verified
        run of drafts plus one token, cut at the first stop), ends requests.

        Returns what each request that received tokens got (finished ones included).
        """
        progressed = []
        for req_id, num_new in zip(out.req_ids, out.num_scheduled_tokens):
            request = self.requests.get(req_id)
            if request is None or request.status is not Status.RUNNING:
                continue  # aborted while the step ran
            request.num_computed_tokens += num_new
            token_ids = sampled.get(req_id)
            request.spec_token_ids = []
            if token_ids is None:
                continue  # a prefill chunk that did not reach the end
            token_ids = [token_ids] if isinstance(token_ids, int) else token_ids
            num_drafts = len(out.spec_token_ids.get(req_id, ()))
            request.num_computed_tokens -= num_drafts + 1 - len(token_ids)  # rejected drafts: their KV is stale
            progress = Progress(request, [], num_drafts, len(token_ids) - 1)
            if num_drafts:
                self._count_spec(request, num_drafts, len(token_ids) - 1)
            for token_id in token_ids:
                request.append_token(token_id)
                progress.token_ids.append(token_id)
                if request.check_stop(token_id, self.max_model_len):
                    self.finish(request, request.finish_reason)
                    break
            progressed.append(progress)
        return progressed

    def _count_spec(self, request: Request, num_drafts: int, num_accepted: int) -> None:
        self.num_draft_tokens += num_drafts
        self.num_accepted_tokens += num_accepted
        self.num_spec_rounds += 1
        request.num_draft_tokens += num_drafts
        request.num_accepted_tokens += num_accepted
