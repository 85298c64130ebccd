"""OpenAI Responses API wire types (`/v1/responses`): the request, its input items, the response object,
its output items and the stream events.

Input items are one loose struct (`InputItem`, `type` defaulting to `message`) rather than a tagged
union: clients send "easy" messages without a `type`, and the gateway's translation checks each
item's fields and names the one at fault (`input[2].call_id`). Unknown fields are ignored.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

# --- request -------------------------------------------------------------------------------


class InputContent(msgspec.Struct, kw_only=True):
    """A content part: `input_text` / `output_text` (messages), `reasoning_text` / `summary_text` (reasoning)."""

    type: str = "input_text"
    text: str | None = None


class InputItem(msgspec.Struct, kw_only=True):
    """One input item: `message`, `function_call`, `function_call_output` or `reasoning`."""

    type: str = "message"
    id: str | None = None
    role: str | None = None  # message
    content: str | list[InputContent] | None = None  # message; reasoning's reasoning_text parts
    call_id: str | None = None  # function_call, function_call_output
    name: str | None = None  # function_call
    arguments: str | None = None  # function_call
    output: str | list[InputContent] | None = None  # function_call_output
    summary: list[InputContent] | None = None  # reasoning
    status: str | None = None


class FunctionTool(msgspec.Struct, kw_only=True):
    type: str = "function"
    name: str | None = None
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class NamedFunctionChoice(msgspec.Struct, kw_only=True):
    type: str
    name: str | None = None


ResponsesToolChoice = Literal["none", "auto", "required"] | NamedFunctionChoice


class TextFormatSpec(msgspec.Struct, kw_only=True):
    """`text.format`: `text`, `json_object`, or `json_schema` with its `name` and `schema` side by side."""

    type: str = "text"
    name: str | None = None
    schema: dict[str, Any] | None = None
    description: str | None = None
    strict: bool | None = None


class TextOptions(msgspec.Struct, kw_only=True):
    format: TextFormatSpec | None = None
    verbosity: str | None = None


class ReasoningOptions(msgspec.Struct, kw_only=True):
    effort: str | None = None  # "none" turns thinking off in templates that can
    summary: str | None = None


class ResponsesRequest(msgspec.Struct, kw_only=True):
    input: str | list[InputItem]
    model: str | None = None
    instructions: str | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None  # vLLM's extension
    seed: int | None = None
    stop: str | list[str] | None = None  # vLLM's extension
    tools: list[FunctionTool] | None = None
    tool_choice: ResponsesToolChoice | None = None
    parallel_tool_calls: bool | None = None
    text: TextOptions | None = None
    reasoning: ReasoningOptions | None = None
    store: bool | None = None  # default true
    stream: bool | None = None
    previous_response_id: str | None = None
    metadata: dict[str, str] | None = None
    user: str | None = None
    background: bool | None = None
    truncation: str | None = None
    include: list[str] | None = None
    top_logprobs: int | None = None


# --- response ------------------------------------------------------------------------------


class OutputText(msgspec.Struct, kw_only=True, tag_field="type", tag="output_text"):
    text: str
    annotations: list[Any] = []
    logprobs: list[Any] = []


class ReasoningText(msgspec.Struct, kw_only=True, tag_field="type", tag="reasoning_text"):
    text: str


class OutputMessage(msgspec.Struct, kw_only=True, tag_field="type", tag="message"):
    id: str
    status: str
    content: list[OutputText]
    role: str = "assistant"


class FunctionCallItem(msgspec.Struct, kw_only=True, tag_field="type", tag="function_call"):
    id: str
    call_id: str
    name: str
    arguments: str
    status: str


class ReasoningItem(msgspec.Struct, kw_only=True, tag_field="type", tag="reasoning"):
    id: str
    summary: list[Any]
    content: list[ReasoningText]
    status: str


OutputItem = OutputMessage | FunctionCallItem | ReasoningItem
ContentPart = OutputText | ReasoningText


class InputTokensDetails(msgspec.Struct, kw_only=True):
    cached_tokens: int = 0


class OutputTokensDetails(msgspec.Struct, kw_only=True):
    reasoning_tokens: int = 0


class ResponseUsage(msgspec.Struct, kw_only=True):
    input_tokens: int
    output_tokens: int
    total_tokens: int
    input_tokens_details: InputTokensDetails
    output_tokens_details: OutputTokensDetails


class IncompleteDetails(msgspec.Struct, kw_only=True):
    reason: str


class ResponseError(msgspec.Struct, kw_only=True):
    code: str
    message: str


class TextFormatOut(msgspec.Struct, kw_only=True):
    format: dict[str, Any]


class Response(msgspec.Struct, kw_only=True):
    id: str
    created_at: int
    model: str
    status: str  # in_progress | completed | incomplete | failed
    output: list[OutputItem]
    object: str = "response"
    error: ResponseError | None = None
    incomplete_details: IncompleteDetails | None = None
    instructions: str | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    parallel_tool_calls: bool = True
    previous_response_id: str | None = None
    tool_choice: Any = "auto"
    tools: list[Any] = []
    text: TextFormatOut | None = None
    reasoning: dict[str, Any] | None = None
    store: bool = True
    metadata: dict[str, str] = {}
    user: str | None = None
    usage: ResponseUsage | None = None


class ResponseDeleted(msgspec.Struct, kw_only=True):
    id: str
    object: str = "response.deleted"
    deleted: bool = True


class InputItemList(msgspec.Struct, kw_only=True):
    data: list[dict[str, Any]]
    first_id: str | None
    last_id: str | None
    has_more: bool
    object: str = "list"


# --- stream events -------------------------------------------------------------------------


class ResponseStreamEvent(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One SSE event of a streamed response; which fields it carries depends on `type`
    (`response.created`, `response.output_item.added`, `response.output_text.delta`, ...)."""

    type: str
    sequence_number: int
    response: Response | None = None
    output_index: int | None = None
    item: OutputItem | None = None
    item_id: str | None = None
    content_index: int | None = None
    part: ContentPart | None = None
    delta: str | None = None
    text: str | None = None
    arguments: str | None = None
    name: str | None = None
    logprobs: list[Any] | None = None
    code: str | None = None
    message: str | None = None
    param: str | None = None
