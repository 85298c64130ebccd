"""The engine core's state of one request: its tokens, progress and status."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from schemas.engine import SamplingParams


class Status(enum.Enum):
    WAITING = "waiting"
    RUNNING = "running"
    FINISHED = "finished"


@dataclass(slots=True)
class Request:
    """Known tokens (prompt + output) and how many of them are in the KV cache.

    Scheduling is "computed tokens catch up with known tokens": a request needs
    `num_tokens - num_computed_tokens` more tokens run through the model.
    """

    request_id: str
    prompt_token_ids: list[int]
    params: SamplingParams
    max_tokens: int
    eos_token_ids: frozenset[int]
    arrival_time: float = 0.0
    priority: int = 0
    all_token_ids: list[int] = field(init=False)
    num_computed_tokens: int = 0
    num_cached_tokens: int = -1  # prefix-cache hit at first schedule; -1 = not yet scheduled
    status: Status = Status.WAITING
    finish_reason: str | None = None
    stop_reason: int | None = None
    num_preemptions: int = 0
    # Prompt logprobs by position (entry p scores prompt token p + 1); None when not asked for.
    prompt_logprobs: list | None = None
    prompt_logprobs_sent: bool = False
    # Speculative decoding: the draft tokens proposed for the next step (verified, never known
    # tokens), the request's totals, and what the dynamic policy knows of its acceptance.
    spec_token_ids: list[int] = field(default_factory=list)
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0
    spec_accepted: float = 0.0  # decayed count of accepted drafts
    spec_rejected: float = 0.0  # decayed count of verify rounds that ended in a rejection

    def __post_init__(self) -> None:
        self.all_token_ids = list(self.prompt_token_ids)
        if self.params.prompt_logprobs is not None:
            self.prompt_logprobs = [None] * max(len(self.prompt_token_ids) - 1, 0)

    @property
    def num_tokens(self) -> int:
        return len(self.all_token_ids)

    @property
    def num_prompt_tokens(self) -> int:
        return len(self.prompt_token_ids)

    @property
    def num_output_tokens(self) -> int:
        return len(self.all_token_ids) - len(self.prompt_token_ids)

    def append_token(self, token_id: int) -> None:
        self.all_token_ids.append(token_id)

    def num_spec_allowed(self, max_model_len: int) -> int:
        """Draft tokens this request may verify next step: every accepted run plus its bonus
        token stays within max_tokens and the context."""
        return max(min(self.max_tokens - self.num_output_tokens, max_model_len - self.num_tokens) - 1, 0)

    def check_stop(self, token_id: int, max_model_len: int) -> bool:
        """Decides, after a sampled token, whether the request is done; sets the reason."""
        params = self.params
        # Under min_tokens the sampler lets a stop token through only where the grammar allows
        # nothing else, so for a constrained request it ends the output there.
        if self.num_output_tokens >= params.min_tokens or params.structured is not None:
            if not params.ignore_eos and token_id in self.eos_token_ids:
                self.finish_reason, self.stop_reason = "stop", token_id
                return True
            if params.stop_token_ids and token_id in params.stop_token_ids:
                self.finish_reason, self.stop_reason = "stop", token_id
                return True
        if self.num_output_tokens >= self.max_tokens or self.num_tokens >= max_model_len:
            self.finish_reason = "length"
            return True
        return False
