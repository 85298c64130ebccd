"""The one rule set a request must meet to enter the engine: every range check, naming the field.

The engine core runs `admit` on each request it receives (and the offline `LLM` before it
queues a batch); clients only map their API's fields onto `SamplingParams`. A refusal is a
ValueError "<field>: <message>" with the `SamplingParams` field name (or `prompt`, or
`structured` for the output constraint), which the gateway turns into a 400 naming its own field.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from schemas.engine import SamplingParams

MAX_LOGPROBS = 20
MAX_STOP_STRINGS = 16
MAX_TEMPERATURE = 100.0
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True, slots=True)
class Limits:
    """What the loaded engine can serve. The core caps `max_model_len` at its KV cache's size in
    tokens, so a request that fits the context also fits the cache (it never preempts forever)."""

    vocab_size: int
    max_model_len: int


def _check(ok: bool, field: str, message: str) -> None:
    if not ok:
        raise ValueError(f"{field}: {message}")


def _in_range(field: str, value: float | None, low: float, high: float, *, low_open: bool = False) -> None:
    if value is None:
        return
    too_low = value <= low if low_open else value < low
    _check(not too_low and value <= high, field, f"must be in {'(' if low_open else '['}{low:g}, {high:g}], got {value}")


def _check_prompt(prompt_token_ids: list[int], vocab_size: int) -> None:
    _check(len(prompt_token_ids) > 0, "prompt", "must not be empty")
    bad = next((t for t in prompt_token_ids if not 0 <= t < vocab_size), None)
    _check(bad is None, "prompt", f"token id {bad} is outside the vocabulary [0, {vocab_size})")


def _check_length(num_prompt: int, max_tokens: int | None, limits: Limits) -> None:
    """The prompt and the tokens asked for fit the model's context (and so the KV cache)."""
    context = limits.max_model_len
    _check(num_prompt < context, "prompt",
           f"This model's maximum context length is {context} tokens. However, the prompt has "
           f"{num_prompt} tokens, which leaves no room for the completion.")  # fmt: skip
    if max_tokens is None:
        return
    _in_range("max_tokens", max_tokens, 1, _INT64_MAX)
    _check(num_prompt + max_tokens <= context, "max_tokens",
           f"This model's maximum context length is {context} tokens. However, you requested "
           f"{num_prompt + max_tokens} tokens ({num_prompt} in the prompt, {max_tokens} for the completion). "
           "Please reduce the prompt or max_tokens.")  # fmt: skip


def _check_sampling(params: SamplingParams, vocab_size: int) -> None:
    _in_range("temperature", params.temperature, 0.0, MAX_TEMPERATURE)
    _in_range("top_p", params.top_p, 0.0, 1.0, low_open=True)
    _check(-1 <= params.top_k <= _INT64_MAX, "top_k", f"must be -1, 0 (off) or a positive 64-bit integer, got {params.top_k}")
    _in_range("min_p", params.min_p, 0.0, 1.0)
    _in_range("presence_penalty", params.presence_penalty, -2.0, 2.0)
    _in_range("frequency_penalty", params.frequency_penalty, -2.0, 2.0)
    _in_range("repetition_penalty", params.repetition_penalty, 0.0, 100.0, low_open=True)
    _in_range("seed", params.seed, _INT64_MIN, _INT64_MAX)
    _in_range("logprobs", params.logprobs, 0, MAX_LOGPROBS)
    _in_range("prompt_logprobs", params.prompt_logprobs, 0, MAX_LOGPROBS)
    for token_id, bias in (params.logit_bias or {}).items():
        _check(0 <= token_id < vocab_size, "logit_bias", f"token id {token_id} is outside the vocabulary")
        _in_range("logit_bias", bias, -100.0, 100.0)


def _check_stopping(params: SamplingParams, vocab_size: int) -> None:
    _in_range("min_tokens", params.min_tokens, 0, _INT64_MAX)
    if params.max_tokens is not None:
        _check(params.min_tokens <= params.max_tokens, "min_tokens", "must not exceed max_tokens")
    for token_id in params.stop_token_ids or ():
        _check(0 <= token_id < vocab_size, "stop_token_ids", f"holds {token_id}, outside the vocabulary")
    stops = params.stop or ()
    _check(len(stops) <= MAX_STOP_STRINGS, "stop", f"may hold at most {MAX_STOP_STRINGS} strings")
    _check(all(stops), "stop", "stop strings must not be empty")
    # min_tokens holds a constrained output open only while its grammar allows more than a stop
    # token (engine/sampler.py); ignore_eos would have to run on past the grammar's end.
    _check(params.structured is None or not params.ignore_eos, "ignore_eos",
           "cannot be combined with a structured output constraint: the grammar decides where the output ends")


def admit(prompt_token_ids: list[int], params: SamplingParams, limits: Limits) -> SamplingParams:
    """The params the engine runs for this request; ValueError("<field>: ...") when it cannot serve it.

    Normalizes what is valid but means something simpler: top_k -1 or >= the vocabulary is no top-k."""
    _check_prompt(prompt_token_ids, limits.vocab_size)
    _check_length(len(prompt_token_ids), params.max_tokens, limits)
    _check_sampling(params, limits.vocab_size)
    _check_stopping(params, limits.vocab_size)
    if params.top_k < 0 or params.top_k >= limits.vocab_size:
        params = msgspec.structs.replace(params, top_k=0)
    return params
