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

    def check_stop(self, token_id: int, max_model_len: int) -> bool:
        """Decides, after a sampled token, whether the request is done; sets the reason."""
        params = self.params
        if self.num_output_tokens >= params.min_tokens:
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
