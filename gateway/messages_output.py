"""One Messages API call: the translated chat call's output as Anthropic content blocks, whole or as the
stream of message_start, content_block_start / _delta / _stop, message_delta and message_stop."""

from __future__ import annotations

import json
import uuid
from typing import Any

from gateway.errors import ApiError, anthropic_type, renamed_params
from gateway.generation import Events
from gateway.messages_api import PARAM_NAMES, chat_request
from gateway.output_blocks import Block, BlockEvent, ChoiceBlocks
from gateway.routes_chat import ChatCall
from gateway.sse import EventSseWriter, SseWriter
from gateway.state import Services
from schemas.anthropic import (
    ContentBlockDelta,
    ContentBlockStart,
    ContentBlockStop,
    DeltaUsage,
    ErrorDetail,
    ErrorEvent,
    InputJsonDelta,
    Message,
    MessageDelta,
    MessageDeltaBody,
    MessagesRequest,
    MessageStart,
    MessageStop,
    Ping,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolUseBlock,
    Usage,
)


def _tool_input(arguments: str) -> dict[str, Any]:
    """A call's arguments as the object Anthropic's `input` is (text that is no object: kept under `_raw`)."""
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return {"_raw": arguments}
    return value if isinstance(value, dict) else {"_raw": arguments}


def content_block(block: Block, *, empty: bool = False) -> Any:
    """`block` as a content block; `empty`: as content_block_start announces it."""
    if block.kind == "text":
        return TextBlock(text="" if empty else block.text)
    if block.kind == "reasoning":
        return ThinkingBlock(thinking="" if empty else block.text, signature="")
    return ToolUseBlock(id=block.call_id, name=block.name, input={} if empty else _tool_input(block.text))


class MessagesCall:
    """Made by the /v1/messages route per request; `respond` (generation.py) drives it like a chat call."""

    def __init__(self, services: Services, req: MessagesRequest) -> None:
        self.services, self.req = services, req
        with renamed_params(PARAM_NAMES):
            self.chat = ChatCall(services, chat_request(req))
        self.id = f"msg_{uuid.uuid4().hex}"
        self.jobs = self.chat.jobs
        self.num_prompt_tokens = self.chat.num_prompt_tokens
        self.streaming = bool(req.stream)
        self.names = {key: PARAM_NAMES.get(value, value) for key, value in self.chat.names.items()}
        self.state = self.chat.states[0]
        self.output = ChoiceBlocks(self.state)
        self.blocks = self.output.assembler

    def absorb(self, index: int, out: Any) -> None:
        self.output.absorb(out)

    def _stop(self) -> tuple[str | None, str | None]:
        """stop_reason and stop_sequence."""
        state = self.state
        if state.finish_reason is None:
            return None, None
        if state.finish_reason == "length":
            return "max_tokens", None
        if any(block.kind == "tool_call" for block in self.blocks.blocks):
            return "tool_use", None
        if isinstance(state.stop_reason, str):
            return "stop_sequence", state.stop_reason
        return "end_turn", None

    def _usage(self) -> Usage:
        cached = self.state.num_cached_tokens
        return Usage(input_tokens=self.num_prompt_tokens - cached, output_tokens=self.state.num_tokens,
                     cache_read_input_tokens=cached)  # fmt: skip

    def message(self, final: bool = True) -> Message:
        stop_reason, stop_sequence = self._stop() if final else (None, None)
        content = [content_block(block) for block in self.blocks.blocks] if final else []
        return Message(id=self.id, model=self.services.model_name, content=content, stop_reason=stop_reason,
                       stop_sequence=stop_sequence, usage=self._usage())  # fmt: skip

    def body(self) -> Message:
        return self.message()

    # --- streaming -------------------------------------------------------------------------

    @staticmethod
    def _render(ev: BlockEvent) -> Any:
        block = ev.block
        if ev.kind == "open":
            return ContentBlockStart(index=block.index, content_block=content_block(block, empty=True))
        if ev.kind == "close":
            return ContentBlockStop(index=block.index)
        if block.kind == "text":
            delta = TextDelta(text=ev.text)
        elif block.kind == "reasoning":
            delta = ThinkingDelta(thinking=ev.text)
        else:
            delta = InputJsonDelta(partial_json=ev.text)
        return ContentBlockDelta(index=block.index, delta=delta)

    @staticmethod
    def sse(request) -> SseWriter:
        def error(exc: ApiError) -> ErrorEvent:
            return ErrorEvent(error=ErrorDetail(type=anthropic_type(exc.status), message=exc.message))

        return EventSseWriter(request, error)

    async def write_stream(self, sse: SseWriter, events: Events) -> None:
        await sse.send_many([MessageStart(message=self.message(final=False)), Ping()])
        async for _, out in events:
            await sse.send_many([self._render(ev) for ev in self.output.absorb(out)])
        stop_reason, stop_sequence = self._stop()
        await sse.send_many([
            MessageDelta(delta=MessageDeltaBody(stop_reason=stop_reason, stop_sequence=stop_sequence),
                         usage=DeltaUsage(output_tokens=self.state.num_tokens)),
            MessageStop(),
        ])  # fmt: skip
