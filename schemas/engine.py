"""Engine message types: what crosses between an engine client and the engine core process."""

from __future__ import annotations

import msgspec


# --- output constraints: one tagged struct per kind, compiled by grammar/ inside the engine core.
# Schemas and grammars travel as text so that both sides serialize them the same way.


class _Constraint(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind"):
    pass


class JsonSchemaSpec(_Constraint, tag="json_schema"):
    json_schema: str  # the JSON Schema as JSON text
    whitespace: str = "compact"  # or "flexible": bounded free whitespace between tokens


class JsonObjectSpec(_Constraint, tag="json_object"):
    whitespace: str = "compact"


class RegexSpec(_Constraint, tag="regex"):
    regex: str


class ChoiceSpec(_Constraint, tag="choice"):
    choice: list[str]


class LarkSpec(_Constraint, tag="lark"):
    lark: str


class GbnfSpec(_Constraint, tag="gbnf"):
    gbnf: str  # llama.cpp / xgrammar EBNF, start rule `root`


class StructuralTagSpec(_Constraint, tag="structural_tag"):
    structural_tag: str  # {"alternatives": [{begin, schema, end}], ...} as JSON text (grammar/frontends/structural.py)


StructuredSpec = JsonSchemaSpec | JsonObjectSpec | RegexSpec | ChoiceSpec | LarkSpec | GbnfSpec | StructuralTagSpec


class SamplingParams(msgspec.Struct, kw_only=True, omit_defaults=True):
    """How one request samples and when it stops. Validated once, at the edge."""

    max_tokens: int | None = 16
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    seed: int | None = None
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    repetition_penalty: float = 1.0
    logit_bias: dict[int, float] | None = None
    min_tokens: int = 0
    stop: list[str] | None = None
    stop_token_ids: list[int] | None = None
    ignore_eos: bool = False
    logprobs: int | None = None
    prompt_logprobs: int | None = None  # logprob of each prompt token (+ top-n); disables prefix-cache hits
    skip_special_tokens: bool = True
    include_stop_str_in_output: bool = False
    structured: StructuredSpec | None = None


class EngineRequest(msgspec.Struct, kw_only=True):
    """A request as the engine core receives it: token ids in, no text."""

    request_id: str
    prompt_token_ids: list[int]
    params: SamplingParams
    arrival_time: float = 0.0
    priority: int = 0


class TokenLogprob(msgspec.Struct, array_like=True):
    """The sampled token's logprob and the top alternatives at that step."""

    token_id: int
    logprob: float
    top_token_ids: list[int]
    top_logprobs: list[float]


class EngineOutput(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What one step produced for one request: new token ids, and the end if it ended."""

    request_id: str
    new_token_ids: list[int]
    new_logprobs: list[TokenLogprob] | None = None
    prompt_logprobs: list[TokenLogprob] | None = None  # prompt tokens 1..n-1, sent once with the first token
    finish_reason: str | None = None  # "stop" | "length" | "abort" | "error"
    stop_reason: int | None = None  # the stop token id, when one ended the request
    num_cached_tokens: int = 0
    error: str | None = None
    num_draft_tokens: int = 0  # speculative decoding: drafts verified this step, and those accepted
    num_accepted_tokens: int = 0
    # --structured-outputs-lenient: why the finished document breaks its JSON schema (the grammar was widened)
    structured_violation: str | None = None


class EngineStats(msgspec.Struct, kw_only=True):
    """Scheduler and KV cache counters, sent with every step's outputs."""

    num_running: int = 0
    num_waiting: int = 0
    num_total_blocks: int = 0
    num_free_blocks: int = 0
    kv_usage: float = 0.0
    prefix_cache_queries: int = 0
    prefix_cache_hits: int = 0
    num_preemptions: int = 0
    num_prompt_tokens: int = 0
    num_generation_tokens: int = 0
    resident_bytes: int = 0  # the engine-core process's resident set size (refreshed about once a second)
    spec_num_draft_tokens: int = 0  # speculative decoding: drafts verified, accepted, verify rounds
    spec_num_accepted_tokens: int = 0
    spec_num_rounds: int = 0


# --- client -> core --------------------------------------------------------------------


class AddRequest(msgspec.Struct, tag="add"):
    request: EngineRequest


class AbortRequests(msgspec.Struct, tag="abort"):
    request_ids: list[str]


class Shutdown(msgspec.Struct, tag="shutdown"):
    pass


class ResetPrefixCache(msgspec.Struct, tag="reset_prefix_cache"):
    pass


class StartProfile(msgspec.Struct, tag="start_profile"):
    """Start torch's profiler in the core; answered by a ProfileResult."""


class StopProfile(msgspec.Struct, tag="stop_profile"):
    """Stop the profiler and write its Chrome trace to `path`; answered by a ProfileResult."""

    path: str


ClientMessage = AddRequest | AbortRequests | Shutdown | ResetPrefixCache | StartProfile | StopProfile


# --- core -> client --------------------------------------------------------------------


class StepOutputs(msgspec.Struct, tag="outputs"):
    """A step's outputs, and the admission answers since the last message: `accepted` names the
    requests that passed validation (and whose grammar compiled); a refused request is an output
    with finish_reason "error" and error "<field>: <message>" before it was ever accepted."""

    outputs: list[EngineOutput]
    stats: EngineStats
    accepted: list[str] = msgspec.field(default_factory=list)


class ModelInfo(msgspec.Struct, frozen=True):
    """Facts about the loaded model that clients need (validation, templates, routing)."""

    name: str
    path: str
    max_model_len: int
    vocab_size: int
    eos_token_ids: list[int]
    num_total_blocks: int
    summary: str = ""  # what the engine chose at load (dtype, kernels, quantization, threads, memory)


class CoreReady(msgspec.Struct, tag="ready"):
    """Sent once the model is loaded."""

    info: ModelInfo


class CoreFailed(msgspec.Struct, tag="failed"):
    """Sent when the core cannot start (bad model path, corrupt file, out of memory)."""

    message: str


class ProfileResult(msgspec.Struct, tag="profile"):
    """The answer to StartProfile / StopProfile: the trace written (stop), or why it failed."""

    path: str | None = None
    error: str | None = None


class Heartbeat(msgspec.Struct, tag="beat"):
    """Sent by a live core every `HEARTBEAT_INTERVAL_S`, work or not: silence means it hangs (or is stopped)."""


HEARTBEAT_INTERVAL_S = 0.5

CoreMessage = StepOutputs | CoreReady | CoreFailed | ProfileResult | Heartbeat
