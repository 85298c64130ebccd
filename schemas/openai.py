"""OpenAI wire types: chat/completions requests, responses, stream chunks and the error body.

Requests accept `null` for every optional field and ignore unknown fields; defaults are
applied by the gateway when it maps a request to engine sampling parameters. Responses are
encoded with msgspec; chunk and message deltas omit absent fields the way OpenAI does.
"""

from __future__ import annotations

from typing import Any

import msgspec

from schemas.output_constraints import ResponseFormat, StructuredOutputsOptions, ToolChoice

# --- requests ----------------------------------------------------------------------------


class ContentPart(msgspec.Struct, kw_only=True):
    """One element of a content-part array: only `text` parts carry text we can use."""

    type: str
    text: str | None = None


class FunctionCall(msgspec.Struct, kw_only=True):
    name: str
    arguments: str | dict[str, Any] = "{}"


class ToolCall(msgspec.Struct, kw_only=True):
    function: FunctionCall
    id: str | None = None
    type: str = "function"


class ChatMessage(msgspec.Struct, kw_only=True):
    """A message in the request's conversation."""

    role: str
    content: str | list[ContentPart] | None = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None


class FunctionDef(msgspec.Struct, kw_only=True):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ToolDef(msgspec.Struct, kw_only=True):
    function: FunctionDef
    type: str = "function"


class StreamOptions(msgspec.Struct, kw_only=True):
    include_usage: bool | None = None
    continuous_usage_stats: bool | None = None


class SamplingFields(msgspec.Struct, kw_only=True):
    """Sampling fields shared by chat and completions requests (vLLM extensions included)."""

    model: str | None = None
    n: int | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    seed: int | None = None
    stop: str | list[str] | None = None
    stop_token_ids: list[int] | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    repetition_penalty: float | None = None
    logit_bias: dict[str, float] | None = None
    ignore_eos: bool | None = None
    min_tokens: int | None = None
    skip_special_tokens: bool | None = None
    include_stop_str_in_output: bool | None = None
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    user: str | None = None
    response_format: ResponseFormat | None = None
    structured_outputs: StructuredOutputsOptions | None = None  # vLLM: {json | regex | choice | grammar | ...}
    # vLLM's older spelling of the same (before structured_outputs); mapped onto it, never ignored.
    guided_json: Any = None
    guided_regex: str | None = None
    guided_choice: list[str] | None = None
    guided_grammar: str | None = None
    guided_whitespace_pattern: str | None = None
    guided_decoding_backend: str | None = None


class ChatCompletionRequest(SamplingFields, kw_only=True):
    messages: list[ChatMessage]
    max_completion_tokens: int | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = None
    tools: list[ToolDef] | None = None
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    chat_template_kwargs: dict[str, Any] | None = None
    add_generation_prompt: bool | None = None
    continue_final_message: bool | None = None


class CompletionRequest(SamplingFields, kw_only=True):
    prompt: str | list[Any]  # a string, strings, token ids, or lists of token ids
    echo: bool | None = None
    logprobs: int | None = None
    suffix: str | None = None


class TokenizeRequest(msgspec.Struct, kw_only=True):
    """`/tokenize`: either a prompt or chat messages."""

    model: str | None = None
    prompt: str | None = None
    messages: list[ChatMessage] | None = None
    add_special_tokens: bool | None = None
    add_generation_prompt: bool | None = None
    tools: list[ToolDef] | None = None
    chat_template_kwargs: dict[str, Any] | None = None


class DetokenizeRequest(msgspec.Struct, kw_only=True):
    tokens: list[int]
    model: str | None = None


# --- responses ---------------------------------------------------------------------------


class PromptTokensDetails(msgspec.Struct, kw_only=True):
    cached_tokens: int = 0


class Usage(msgspec.Struct, kw_only=True):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: PromptTokensDetails | None = None


class TopLogprob(msgspec.Struct, kw_only=True):
    token: str
    logprob: float
    bytes: list[int] | None


class ChatTokenLogprob(msgspec.Struct, kw_only=True):
    token: str
    logprob: float
    bytes: list[int] | None
    top_logprobs: list[TopLogprob]


class ChatLogprobs(msgspec.Struct, kw_only=True):
    content: list[ChatTokenLogprob] | None


class FunctionDelta(msgspec.Struct, kw_only=True, omit_defaults=True):
    name: str | None = None
    arguments: str | None = None


class ToolCallDelta(msgspec.Struct, kw_only=True, omit_defaults=True):
    index: int
    id: str | None = None
    type: str | None = None
    function: FunctionDelta | None = None


class ChatChoice(msgspec.Struct, kw_only=True):
    """`message` is a dict: `content` stays an explicit null, absent fields stay absent."""

    index: int
    message: dict[str, Any]
    logprobs: ChatLogprobs | None
    finish_reason: str | None
    # --structured-outputs-lenient: how the document breaks its JSON schema (absent unless it does)
    structured_output_violation: str | msgspec.UnsetType = msgspec.UNSET


class ChatCompletion(msgspec.Struct, kw_only=True):
    id: str
    created: int
    model: str
    choices: list[ChatChoice]
    usage: Usage
    object: str = "chat.completion"
    system_fingerprint: str | None = None


class ChatDelta(msgspec.Struct, kw_only=True, omit_defaults=True):
    role: str | None = None
    content: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    tool_calls: list[ToolCallDelta] | None = None


class ChunkChoice(msgspec.Struct, kw_only=True):
    index: int
    delta: ChatDelta
    logprobs: ChatLogprobs | None = None
    finish_reason: str | None = None
    # --structured-outputs-lenient: how the document breaks its JSON schema (absent unless it does)
    structured_output_violation: str | msgspec.UnsetType = msgspec.UNSET


class ChatCompletionChunk(
    msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="object", tag="chat.completion.chunk"
):
    """One SSE event; `usage` appears only on the final usage chunk (`object` is the tag)."""

    id: str
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: Usage | None = None


class CompletionLogprobs(msgspec.Struct, kw_only=True):
    tokens: list[str]
    token_logprobs: list[float | None]
    top_logprobs: list[dict[str, float] | None]
    text_offset: list[int]


class CompletionChoice(msgspec.Struct, kw_only=True):
    index: int
    text: str
    logprobs: CompletionLogprobs | None = None
    finish_reason: str | None = None
    # --structured-outputs-lenient: how the document breaks its JSON schema (absent unless it does)
    structured_output_violation: str | msgspec.UnsetType = msgspec.UNSET


class Completion(msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="object", tag="text_completion"):
    """A text completion response, or one stream chunk (also `text_completion`)."""

    id: str
    created: int
    model: str
    choices: list[CompletionChoice]
    usage: Usage | None = None


class ModelCard(msgspec.Struct, kw_only=True):
    id: str
    created: int
    owned_by: str = "agent-gateway"
    object: str = "model"
    max_model_len: int | None = None
    root: str | None = None


class ModelList(msgspec.Struct, kw_only=True):
    data: list[ModelCard]
    object: str = "list"


class ErrorInfo(msgspec.Struct, kw_only=True):
    message: str
    type: str
    param: str | None
    code: str | int | None


class ErrorBody(msgspec.Struct, kw_only=True):
    error: ErrorInfo
