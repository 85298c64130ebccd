"""The engine core's speculative decoding: after each step, the draft tokens of every decoding request.

Methods: "ngram" (prompt lookup, no model), "draft" (a smaller model of the same
vocabulary), "tli" (a draft model of another vocabulary, through `VocabBridge`). The
scheduler verifies the proposals in the next step; the sampler keeps the accepted run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from engine.request import Request
from engine.spec.bridge import VocabBridge
from engine.spec.draft import DraftModel
from engine.spec.ngram import NgramProposer
from engine.spec.policy import SpecPolicy

log = logging.getLogger(__name__)


class Speculator:
    """Owned by the engine core: `propose` after each step's update, `remove` for requests that
    leave the running batch (finished, aborted, preempted), `observe` after each verify round."""

    def __init__(self, method: str, policy: SpecPolicy, max_model_len: int, draft: DraftModel | None = None,
                 bridge: VocabBridge | None = None) -> None:  # fmt: skip
        self.method = method
        self.policy = policy
        self.max_model_len = max_model_len
        self.ngram = NgramProposer() if method == "ngram" else None
        self.draft = draft
        self.bridge = bridge
        self._step: tuple[int, float] | None = None  # (tokens the next step runs, when proposing ended)

    def remove(self, request_ids: list[str]) -> None:
        for request_id in request_ids:
            if self.ngram is not None:
                self.ngram.remove(request_id)
            if self.draft is not None:
                self.draft.remove(request_id)

    def observe(self, request: Request, num_drafts: int, num_accepted: int) -> None:
        self.policy.observe(request, num_drafts, num_accepted)

    def propose(self, running: list[Request], num_other_tokens: int, allowed: Callable[[str, list[int]], int]) -> None:
        """Sets `spec_token_ids` of the decoding requests in `running`; `allowed(id, drafts)` is
        how many leading drafts the request's grammar accepts."""
        if self._step is not None:
            self.policy.record_step(self._step[0], time.perf_counter() - self._step[1])
            self._step = None
        requests = [r for r in running if r.num_tokens - r.num_computed_tokens == 1]
        caps = [min(r.num_spec_allowed(self.max_model_len), self.policy.max_tokens) for r in requests]
        found: list[list[int]] = []
        if self.ngram is not None:
            found = [self.ngram.lookup(r.request_id, r.all_token_ids, cap) for r, cap in zip(requests, caps)]
            caps = [len(ids) for ids in found]
        ks = self.policy.choose(requests, caps, num_other_tokens)
        if self.draft is not None:
            found = self._draft(requests, ks)
        for request, k, ids in zip(requests, ks, found):
            ids = ids[:k]
            if ids:
                ids = ids[: allowed(request.request_id, ids)]
            request.spec_token_ids = ids
        if requests:
            self._step = (num_other_tokens + sum(1 + len(r.spec_token_ids) for r in requests), time.perf_counter())

    def _draft(self, requests: list[Request], ks: list[int]) -> list[list[int]]:
        contexts, held, num_tokens = {}, {}, {}
        for request, k in zip(requests, ks):
            if k <= 0:
                continue
            if self.bridge is None:
                contexts[request.request_id] = request.all_token_ids
            else:
                contexts[request.request_id], held[request.request_id] = self.bridge.to_draft(request.all_token_ids)
            num_tokens[request.request_id] = k
        drafted = self.draft.propose(contexts, num_tokens) if contexts else {}
        out = []
        for request, k in zip(requests, ks):
            ids = drafted.get(request.request_id, [])
            if ids and self.bridge is not None:
                ids = self.bridge.to_target(request.all_token_ids, held[request.request_id], ids, k)
            out.append(ids)
        return out
