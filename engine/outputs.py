"""What the engine's clients hand to their callers: per-request outputs with text."""

from __future__ import annotations

from dataclasses import dataclass, field

from schemas.engine import TokenLogprob


@dataclass(slots=True)
class RequestOutput:
    """A request's output. The async client yields deltas (new tokens and text since the
    last output); the offline `LLM` returns the accumulated whole."""

    request_id: str
    prompt_token_ids: list[int]
    token_ids: list[int] = field(default_factory=list)
    text: str = ""
    logprobs: list[TokenLogprob] | None = None
    prompt_logprobs: list[TokenLogprob] | None = None  # prompt tokens 1..n-1 (token 0 has none)
    finished: bool = False
    finish_reason: str | None = None
    stop_reason: int | str | None = None
    num_cached_tokens: int = 0
    error: str | None = None
    num_draft_tokens: int = 0  # speculative decoding: drafts verified for this request, and accepted
    num_accepted_tokens: int = 0
    structured_violation: str | None = None  # lenient structured output: how the document breaks its schema

    @property
    def num_prompt_tokens(self) -> int:
        return len(self.prompt_token_ids)

    def merge(self, delta: RequestOutput) -> None:
        """Accumulates a delta into this output."""
        self.token_ids.extend(delta.token_ids)
        self.text += delta.text
        if delta.logprobs is not None:
            self.logprobs = (self.logprobs or []) + delta.logprobs
        if delta.prompt_logprobs is not None:
            self.prompt_logprobs = delta.prompt_logprobs
        self.finished = delta.finished
        self.finish_reason = delta.finish_reason
        self.stop_reason = delta.stop_reason
        self.num_cached_tokens = delta.num_cached_tokens
        self.error = delta.error
        self.num_draft_tokens += delta.num_draft_tokens
        self.num_accepted_tokens += delta.num_accepted_tokens
        self.structured_violation = delta.structured_violation or self.structured_violation
