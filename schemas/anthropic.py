"""Anthropic Messages API wire types (`/v1/messages`, `/v1/messages/count_tokens`): the request with
its content blocks and tools, the message reply, and the stream events.

Content blocks and tool_choice are tagged unions on `type`, so an unknown block type or a
misspelt field is a decode 400 naming its path. Unknown fields are ignored.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

# --- request -------------------------------------------------------------------------------


class _Block(msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type"):
    cache_control: dict[str, Any] | None = None


class TextBlock(_Block, tag="text"):
    text: str


class ImageBlock(_Block, tag="image"):
    source: dict[str, Any] | None = None  # accepted by the wire type, refused by the gateway (text models)


class ToolUseBlock(_Block, tag="tool_use"):
    id: str
    name: str
    input: dict[str, Any]


class ToolResultBlock(_Block, tag="tool_result"):
    tool_use_id: str
    content: str | list[TextBlock | ImageBlock] | None = None
    is_error: bool | None = None


class ThinkingBlock(_Block, tag="thinking"):
    thinking: str
    signature: str | None = None


class RedactedThinkingBlock(_Block, tag="redacted_thinking"):
    data: str | None = None


ContentBlock = TextBlock | ImageBlock | ToolUseBlock | ToolResultBlock | ThinkingBlock | RedactedThinkingBlock


class InputMessage(msgspec.Struct, kw_only=True):
    role: Literal["user", "assistant"]
    content: str | list[ContentBlock]


class Tool(msgspec.Struct, kw_only=True):
    name: str
    input_schema: dict[str, Any] | None = None
    description: str | None = None
    type: str | None = None  # "custom" or absent; Anthropic's server tools (bash_..., web_search_...) are refused


class _Choice(msgspec.Struct, kw_only=True, tag_field="type"):
    disable_parallel_tool_use: bool | None = None


class AutoChoice(_Choice, tag="auto"):
    pass


class AnyChoice(_Choice, tag="any"):
    pass


class ToolChoiceTool(_Choice, tag="tool"):
    name: str


class NoneChoice(_Choice, tag="none"):
    pass


ToolChoice = AutoChoice | AnyChoice | ToolChoiceTool | NoneChoice


class ThinkingConfig(msgspec.Struct, kw_only=True):
    type: Literal["enabled", "disabled", "adaptive"]
    budget_tokens: int | None = None


class MessagesRequest(msgspec.Struct, kw_only=True):
    model: str
    messages: list[InputMessage]
    max_tokens: int
    system: str | list[TextBlock] | None = None
    stop_sequences: list[str] | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None
    thinking: ThinkingConfig | None = None
    metadata: dict[str, Any] | None = None
    stream: bool | None = None
    service_tier: str | None = None


class CountTokensRequest(msgspec.Struct, kw_only=True):
    model: str
    messages: list[InputMessage]
    system: str | list[TextBlock] | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None
    thinking: ThinkingConfig | None = None


class CountTokensResponse(msgspec.Struct, kw_only=True):
    input_tokens: int


# --- reply ---------------------------------------------------------------------------------


class Usage(msgspec.Struct, kw_only=True):
    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0


class Message(msgspec.Struct, kw_only=True):
    id: str
    model: str
    content: list[ContentBlock]
    stop_reason: str | None  # end_turn | max_tokens | stop_sequence | tool_use
    stop_sequence: str | None
    usage: Usage
    type: str = "message"
    role: str = "assistant"


# --- stream events -------------------------------------------------------------------------


class _Event(msgspec.Struct, kw_only=True, tag_field="type"):
    pass


class MessageStart(_Event, tag="message_start"):
    message: Message


class ContentBlockStart(_Event, tag="content_block_start"):
    index: int
    content_block: ContentBlock


class TextDelta(msgspec.Struct, kw_only=True, tag_field="type", tag="text_delta"):
    text: str


class InputJsonDelta(msgspec.Struct, kw_only=True, tag_field="type", tag="input_json_delta"):
    partial_json: str


class ThinkingDelta(msgspec.Struct, kw_only=True, tag_field="type", tag="thinking_delta"):
    thinking: str


class SignatureDelta(msgspec.Struct, kw_only=True, tag_field="type", tag="signature_delta"):
    signature: str


class ContentBlockDelta(_Event, tag="content_block_delta"):
    index: int
    delta: TextDelta | InputJsonDelta | ThinkingDelta | SignatureDelta


class ContentBlockStop(_Event, tag="content_block_stop"):
    index: int


class MessageDeltaBody(msgspec.Struct, kw_only=True):
    stop_reason: str | None
    stop_sequence: str | None


class DeltaUsage(msgspec.Struct, kw_only=True):
    output_tokens: int


class MessageDelta(_Event, tag="message_delta"):
    delta: MessageDeltaBody
    usage: DeltaUsage


class MessageStop(_Event, tag="message_stop"):
    pass


class Ping(_Event, tag="ping"):
    pass


class ErrorDetail(msgspec.Struct, kw_only=True):
    type: str
    message: str


class ErrorEvent(_Event, tag="error"):
    """A stream's error event, and the body of every error reply (`{"type": "error", "error": {...}}`)."""

    error: ErrorDetail


StreamEvent = MessageStart | ContentBlockStart | ContentBlockDelta | ContentBlockStop | MessageDelta | MessageStop | Ping | ErrorEvent
