"""How many tokens each request proposes this step: a fixed k, or k chosen for the most tokens per second.

Dynamic speculation models one step: a request whose drafts are each accepted with
probability a (its recent acceptance, decayed) yields 1 + a + a^2 + ... + a^k tokens for k
drafts, while the step costs the target's forward over all the step's tokens plus, for a
draft model, one draft forward per drafted depth; both costs are measured at start-up
(`StepCost`). Drafts are handed out one at a time to the request with the largest expected
gain, and the point with the most expected tokens per second wins; unless it beats plain
decoding by a margin (the model's error), k = 0, so a compute-bound batch gets none.
"""

from __future__ import annotations

import heapq

from engine.spec.cost_model import ObservedCost, StepCost

MAX_AUTO_TOKENS = 8  # the most drafts per request per step under dynamic speculation
DECAY = 0.7  # weight of a request's older verify rounds after each new one
PRIOR_WEIGHT = 2.0  # rounds' worth of the global acceptance a new request starts from
LOOKAHEAD = MAX_AUTO_TOKENS  # drafts handed out past the best point before giving up
MARGIN = 1.03  # predicted tokens/s over plain decoding that speculation must beat (the model's error)


class SpecPolicy:
    """Owned by the Speculator: keeps acceptance statistics and picks k per request."""

    def __init__(self, fixed: int | None, target_cost: StepCost | None = None, draft_cost: StepCost | None = None) -> None:
        self.fixed = fixed
        self.max_tokens = fixed if fixed is not None else MAX_AUTO_TOKENS
        self.target_cost = ObservedCost(target_cost) if target_cost is not None else None
        self.draft_cost = draft_cost
        self.accepted = 1.0  # global decayed counts: the prior of new requests (starts at 0.5)
        self.rejected = 1.0

    def observe(self, request, num_drafts: int, num_accepted: int) -> None:
        """Called after each verify round of `request` (drafts it had, drafts the target kept)."""
        rejected = 1.0 if num_accepted < num_drafts else 0.0
        request.spec_accepted = request.spec_accepted * DECAY + num_accepted
        request.spec_rejected = request.spec_rejected * DECAY + rejected
        self.accepted = self.accepted * 0.99 + num_accepted
        self.rejected = self.rejected * 0.99 + rejected

    def record_step(self, num_tokens: int, seconds: float) -> None:
        """Called with each target step's size and wall time (from the end of one proposal to the next)."""
        if self.target_cost is not None:
            self.target_cost.record(num_tokens, seconds)

    def acceptance(self, request) -> float:
        """Per-draft acceptance probability (geometric model), the global rate standing in for missing rounds."""
        prior = self.accepted / (self.accepted + self.rejected)
        accepted = request.spec_accepted + PRIOR_WEIGHT * prior
        return min(accepted / (accepted + request.spec_rejected + PRIOR_WEIGHT * (1 - prior)), 0.99)

    def choose(self, requests: list, caps: list[int], num_other_tokens: int) -> list[int]:
        """k per request (k <= caps[i]); `num_other_tokens` more tokens (prefill chunks) share the step.

        Drafts are handed out in order of expected gain, past a draft that does not pay
        (LOOKAHEAD more): the measured cost is not convex (the C linears switch kernels
        above a few rows), so a run of drafts can pay where its first one does not. The
        best point seen wins if it beats plain decoding by MARGIN, else every k is 0.
        """
        caps = [min(c, self.max_tokens) for c in caps]
        if self.fixed is not None or self.target_cost is None or not any(caps):
            return caps
        alphas = [self.acceptance(r) for r in requests]
        depths: list[int] = []  # depths[j]: requests drafting at least j + 1 tokens
        ks = [0] * len(requests)
        num_tokens = num_other_tokens + len(requests)
        expected = float(len(requests))
        plain_rate = expected / self._cost(num_tokens, depths)
        best_rate, best_len, order = plain_rate * MARGIN, 0, []
        heap = [(-a, i) for i, a in enumerate(alphas) if caps[i] > 0]
        heapq.heapify(heap)
        while heap and len(order) - best_len <= LOOKAHEAD:
            neg_gain, i = heapq.heappop(heap)
            depth = ks[i]
            if depth == len(depths):
                depths.append(0)
            depths[depth] += 1
            ks[i], num_tokens, expected = depth + 1, num_tokens + 1, expected - neg_gain
            order.append(i)
            rate = expected / self._cost(num_tokens, depths)
            if rate > best_rate:
                best_rate, best_len = rate, len(order)
            if ks[i] < caps[i]:
                heapq.heappush(heap, (neg_gain * alphas[i], i))
        chosen = [0] * len(requests)
        for i in order[:best_len]:
            chosen[i] += 1
        return chosen

    def _cost(self, num_tokens: int, depths: list[int]) -> float:
        draft = sum(self.draft_cost(n) for n in depths) if self.draft_cost is not None else 0.0
        return self.target_cost(num_tokens) + draft
