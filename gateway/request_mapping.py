"""Maps an OpenAI request onto engine SamplingParams; the engine checks the ranges at admission."""

from __future__ import annotations

import msgspec

from gateway.errors import bad_request
from schemas.engine import SamplingParams, StructuredSpec
from schemas.openai import ChatCompletionRequest, CompletionRequest, SamplingFields
from schemas.output_constraints import NamedToolChoice

MAX_N = 64
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _wire_int(name: str, value: int | None) -> None:
    """Integers must fit 64 bits to reach the engine at all; their ranges are the engine's to check."""
    if value is not None and not _INT64_MIN <= value <= _INT64_MAX:
        raise bad_request(f"{name} must be a 64-bit integer, got {value}", name)


def _stop_strings(stop: str | list[str] | None) -> list[str] | None:
    if stop is None:
        return None
    return [stop] if isinstance(stop, str) else list(stop) or None


def _logit_bias(bias: dict[str, float] | None) -> dict[int, float] | None:
    if not bias:
        return None
    out: dict[int, float] = {}
    for key, value in bias.items():
        try:
            token_id = int(key)
        except ValueError:
            raise bad_request(f"logit_bias keys must be token ids, got {key!r}", "logit_bias") from None
        _wire_int("logit_bias", token_id)
        out[token_id] = float(value)
    return out


def _check_wire(req: SamplingFields) -> None:
    if req.n is not None and not 1 <= req.n <= MAX_N:
        raise bad_request(f"n must be in [1, {MAX_N}], got {req.n}", "n")
    for name in ("top_k", "seed", "min_tokens", "max_tokens"):
        _wire_int(name, getattr(req, name))
    for token_id in req.stop_token_ids or ():
        _wire_int("stop_token_ids", token_id)


def sampling_params(req: ChatCompletionRequest | CompletionRequest, structured: StructuredSpec | None = None
                    ) -> SamplingParams:  # fmt: skip
    """The engine parameters for one choice of `req` (OpenAI defaults filled in). Ranges, the context
    length and the vocabulary are checked by the engine at admission (engine/validation.py); only
    what the engine cannot see is checked here: `n`, the request's shape, 64-bit integers.
    `structured` is the request's output constraint (gateway.structured_request, tool_constraint)."""
    _check_wire(req)
    if isinstance(req, ChatCompletionRequest):
        _wire_int("max_completion_tokens", req.max_completion_tokens)
        requested = req.max_completion_tokens if req.max_completion_tokens is not None else req.max_tokens
        logprobs = _chat_logprobs(req)
    else:
        requested = 16 if req.max_tokens is None else req.max_tokens  # the completions API's default
        _wire_int("logprobs", req.logprobs)
        logprobs = req.logprobs
    return SamplingParams(
        max_tokens=requested,  # None: up to the model's context
        temperature=1.0 if req.temperature is None else req.temperature,
        top_p=1.0 if req.top_p is None else req.top_p,
        top_k=req.top_k or 0,
        min_p=req.min_p or 0.0,
        seed=req.seed,
        presence_penalty=req.presence_penalty or 0.0,
        frequency_penalty=req.frequency_penalty or 0.0,
        repetition_penalty=1.0 if req.repetition_penalty is None else req.repetition_penalty,
        logit_bias=_logit_bias(req.logit_bias),
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
    _wire_int("top_logprobs", req.top_logprobs)
    if req.top_logprobs is not None and not req.logprobs:
        raise bad_request("top_logprobs requires logprobs to be true", "top_logprobs")
    return (req.top_logprobs or 0) if req.logprobs else None


def check_tool_choice(req: ChatCompletionRequest) -> None:
    """A tool_choice that forces calls ("required" or a named function) needs tools, and a named
    one a tool of that name (its shape is the wire type's: schemas/output_constraints.py)."""
    choice = req.tool_choice
    if choice is None or choice in ("none", "auto"):
        return
    if not req.tools:
        raise bad_request("tool_choice needs tools", "tool_choice")
    if isinstance(choice, NamedToolChoice) and choice.function.name not in {tool.function.name for tool in req.tools}:
        raise bad_request(f"tool_choice names {choice.function.name!r}, which is not among the tools", "tool_choice")


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
