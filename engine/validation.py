"""Request validation at the edge: clear ValueErrors naming the field, before anything is scheduled."""

from __future__ import annotations

from schemas.engine import SamplingParams


def _check(ok: bool, field: str, message: str) -> None:
    if not ok:
        raise ValueError(f"{field}: {message}")


def validate_request(prompt_token_ids: list[int], params: SamplingParams, vocab_size: int, max_model_len: int) -> None:
    """Raises ValueError("<field>: ...") for input the engine cannot serve."""
    num_prompt = len(prompt_token_ids)
    _check(num_prompt > 0, "prompt", "must not be empty")
    _check(all(0 <= t < vocab_size for t in prompt_token_ids), "prompt", f"token ids must be in [0, {vocab_size})")
    _check(
        num_prompt < max_model_len,
        "prompt",
        f"has {num_prompt} tokens; this model's context is {max_model_len} tokens and at least one must be generated",
    )
    if params.max_tokens is not None:
        _check(params.max_tokens >= 1, "max_tokens", f"must be >= 1, got {params.max_tokens}")
        _check(
            num_prompt + params.max_tokens <= max_model_len,
            "max_tokens",
            f"prompt ({num_prompt} tokens) + max_tokens ({params.max_tokens}) exceeds the context of {max_model_len} tokens",
        )
    _check(params.temperature >= 0, "temperature", f"must be >= 0, got {params.temperature}")
    _check(0 < params.top_p <= 1, "top_p", f"must be in (0, 1], got {params.top_p}")
    _check(params.top_k >= -1, "top_k", f"must be -1, 0 (off) or positive, got {params.top_k}")
    _check(0 <= params.min_p <= 1, "min_p", f"must be in [0, 1], got {params.min_p}")
    _check(-2 <= params.presence_penalty <= 2, "presence_penalty", "must be in [-2, 2]")
    _check(-2 <= params.frequency_penalty <= 2, "frequency_penalty", "must be in [-2, 2]")
    _check(params.repetition_penalty > 0, "repetition_penalty", "must be > 0")
    _check(params.min_tokens >= 0, "min_tokens", "must be >= 0")
    if params.max_tokens is not None:
        _check(params.min_tokens <= params.max_tokens, "min_tokens", "must not exceed max_tokens")
    if params.logprobs is not None:
        _check(0 <= params.logprobs <= 20, "logprobs", f"must be in [0, 20], got {params.logprobs}")
    if params.prompt_logprobs is not None:
        _check(0 <= params.prompt_logprobs <= 20, "prompt_logprobs", f"must be in [0, 20], got {params.prompt_logprobs}")
    for token_id, bias in (params.logit_bias or {}).items():
        _check(0 <= token_id < vocab_size, "logit_bias", f"token id {token_id} is out of range")
        _check(-100 <= bias <= 100, "logit_bias", f"bias {bias} must be in [-100, 100]")
    for token_id in params.stop_token_ids or []:
        _check(0 <= token_id < vocab_size, "stop_token_ids", f"token id {token_id} is out of range")
    for stop in params.stop or []:
        _check(bool(stop), "stop", "stop strings must not be empty")
