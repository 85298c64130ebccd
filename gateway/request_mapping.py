"""Maps a validated OpenAI request onto engine SamplingParams; every range check lives here."""

from __future__ import annotations

import msgspec

from gateway.errors import bad_request
from schemas.engine import SamplingParams, StructuredSpec
from schemas.openai import ChatCompletionRequest, CompletionRequest, SamplingFields

MAX_N = 64
MAX_TOP_LOGPROBS = 20
MAX_STOP_STRINGS = 16
_SEED_MIN, _SEED_MAX = -(2**63), 2**63 - 1
_INT64_MAX = 2**63 - 1


def _check_range(name: str, value: float | None, low: float, high: float, *, low_open: bool = False) -> None:
    if value is None:
        return
    too_low = value <= low if low_open else value < low
    if too_low or value > high:
        bracket = "(" if low_open else "["
        raise bad_request(f"{name} must be in {bracket}{low}, {high}], got {value}", name)


def _stop_strings(stop: str | list[str] | None) -> list[str] | None:
    if stop is None:
        return None
    stops = [stop] if isinstance(stop, str) else list(stop)
    if len(stops) > MAX_STOP_STRINGS:
        raise bad_request(f"stop may hold at most {MAX_STOP_STRINGS} strings", "stop")
    if any(s == "" for s in stops):
        raise bad_request("stop strings must not be empty", "stop")
    return stops or None


def _logit_bias(bias: dict[str, float] | None, vocab_size: int) -> dict[int, float] | None:
    if not bias:
        return None
    out: dict[int, float] = {}
    for key, value in bias.items():
        try:
            token_id = int(key)
        except ValueError:
            raise bad_request(f"logit_bias keys must be token ids, got {key!r}", "logit_bias") from None
        if not 0 <= token_id < vocab_size:
            raise bad_request(f"logit_bias token id {token_id} is outside the vocabulary", "logit_bias")
        _check_range("logit_bias", value, -100.0, 100.0)
        out[token_id] = float(value)
    return out


def _validate_common(req: SamplingFields, vocab_size: int) -> None:
    _check_range("n", req.n, 1, MAX_N)
    _check_range("temperature", req.temperature, 0.0, 100.0)
    _check_range("top_p", req.top_p, 0.0, 1.0, low_open=True)
    _check_range("min_p", req.min_p, 0.0, 1.0)
    _check_range("presence_penalty", req.presence_penalty, -2.0, 2.0)
    _check_range("frequency_penalty", req.frequency_penalty, -2.0, 2.0)
    _check_range("repetition_penalty", req.repetition_penalty, 0.0, 100.0, low_open=True)
    _check_range("seed", req.seed, _SEED_MIN, _SEED_MAX)
    if req.top_k is not None and not -1 <= req.top_k <= _INT64_MAX:
        raise bad_request(f"top_k must be -1, 0 (off) or a positive 64-bit integer, got {req.top_k}", "top_k")
    _check_range("min_tokens", req.min_tokens, 0, _INT64_MAX)
    _check_range("max_tokens", req.max_tokens, -_INT64_MAX, _INT64_MAX)
    for token_id in req.stop_token_ids or ():
        if not 0 <= token_id < vocab_size:
            raise bad_request(f"stop_token_ids holds {token_id}, outside the vocabulary", "stop_token_ids")


def _max_tokens(requested: int | None, name: str, num_prompt_tokens: int, max_model_len: int) -> int:
    if requested is not None:
        if requested < 1:
            raise bad_request(f"{name} must be >= 1, got {requested}", name)
        if num_prompt_tokens + requested > max_model_len:
            raise bad_request(
                f"This model's maximum context length is {max_model_len} tokens. However, you requested "
                f"{num_prompt_tokens + requested} tokens ({num_prompt_tokens} in the prompt, {requested} "
                f"for the completion). Please reduce the prompt or {name}.",
                name,
            )
        return requested
    room = max_model_len - num_prompt_tokens
    if room < 1:
        raise bad_request(
            f"This model's maximum context length is {max_model_len} tokens. However, the prompt has "
            f"{num_prompt_tokens} tokens, which leaves no room for the completion.",
            "messages" if name == "max_completion_tokens" else "prompt",
        )
    return room


def sampling_params(
    req: ChatCompletionRequest | CompletionRequest,
    *,
    num_prompt_tokens: int,
    max_model_len: int,
    vocab_size: int,
    structured: StructuredSpec | None = None,
) -> SamplingParams:
    """The engine parameters for one choice of `req`; raises ApiError(400) on a bad field.

    `structured` is the request's output constraint (gateway.structured_request, tool_constraint)."""
    _validate_common(req, vocab_size)
    if isinstance(req, ChatCompletionRequest):
        _check_range("max_completion_tokens", req.max_completion_tokens, -_INT64_MAX, _INT64_MAX)
        name = "max_completion_tokens" if req.max_completion_tokens is not None else "max_tokens"
        requested = req.max_completion_tokens if req.max_completion_tokens is not None else req.max_tokens
        logprobs = _chat_logprobs(req)
    else:
        name, requested = "max_tokens", (16 if req.max_tokens is None else req.max_tokens)
        _check_range("logprobs", req.logprobs, 0, MAX_TOP_LOGPROBS)
        logprobs = req.logprobs
    if structured is not None and (req.ignore_eos or (req.min_tokens or 0) > 0):
        # The grammar may end the output (only EOS allowed) before min_tokens; with EOS suppressed the
        # engine would sample a token the grammar refuses and fail the request.
        field = "ignore_eos" if req.ignore_eos else "min_tokens"
        raise bad_request(f"{field} cannot be combined with a structured output constraint: the grammar "
                          "decides where the output ends", field)  # fmt: skip
    top_k = req.top_k or 0
    if top_k >= vocab_size:  # keeping every token is no top-k at all (and keeps huge values away from torch)
        top_k = 0
    return SamplingParams(
        max_tokens=_max_tokens(requested, name, num_prompt_tokens, max_model_len),
        temperature=1.0 if req.temperature is None else req.temperature,
        top_p=1.0 if req.top_p is None else req.top_p,
        top_k=0 if top_k < 0 else top_k,
        min_p=req.min_p or 0.0,
        seed=req.seed,
        presence_penalty=req.presence_penalty or 0.0,
        frequency_penalty=req.frequency_penalty or 0.0,
        repetition_penalty=1.0 if req.repetition_penalty is None else req.repetition_penalty,
        logit_bias=_logit_bias(req.logit_bias, vocab_size),
        min_tokens=req.min_tokens or 0,
        stop=_stop_strings(req.stop),
        stop_token_ids=req.stop_token_ids or None,
        ignore_eos=bool(req.ignore_eos),
        logprobs=logprobs,
        skip_special_tokens=True if req.skip_special_tokens is None else req.skip_special_tokens,
        include_stop_str_in_output=bool(req.include_stop_str_in_output),
        structured=structured,
    )


def _chat_logprobs(req: ChatCompletionRequest) -> int | None:
    _check_range("top_logprobs", req.top_logprobs, 0, MAX_TOP_LOGPROBS)
    if req.top_logprobs is not None and not req.logprobs:
        raise bad_request("top_logprobs requires logprobs to be true", "top_logprobs")
    return (req.top_logprobs or 0) if req.logprobs else None


def check_tool_choice(req: ChatCompletionRequest) -> None:
    """tool_choice is "none", "auto", "required" or a named function among `tools`."""
    choice = req.tool_choice
    if choice is None or choice in ("none", "auto"):
        return
    if choice != "required" and not isinstance(choice, dict):
        raise bad_request(f"tool_choice must be none, auto, required or a named function, got {choice!r}", "tool_choice")
    if not req.tools:
        raise bad_request("tool_choice needs tools", "tool_choice")
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name") if isinstance(choice.get("function"), dict) else None
        if name not in {tool.function.name for tool in req.tools}:
            raise bad_request(f"tool_choice names {name!r}, which is not among the tools", "tool_choice")


def choice_params(params: SamplingParams, n: int) -> list[SamplingParams]:
    """One SamplingParams per choice; with a seed, choice i gets a distinct seed derived from it."""
    if n == 1:
        return [params]
    out = []
    for i in range(n):
        seed = None if params.seed is None else (params.seed + i * 0x9E3779B1) % (2**63)
        out.append(_replace_seed(params, seed))
    return out


def _replace_seed(params: SamplingParams, seed: int | None) -> SamplingParams:
    return msgspec.structs.replace(params, seed=seed)
