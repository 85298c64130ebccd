"""One Responses API call: the translated chat call's output as Response items, whole or as the
documented event sequence (response.created ... response.completed, each with its sequence_number),
and the stored record that `previous_response_id` continues from."""

from __future__ import annotations

import logging
import sqlite3
import time
from typing import Any

import msgspec

from gateway.errors import ApiError, renamed_params
from gateway.generation import Events
from gateway.output_blocks import Block, BlockEvent, ChoiceBlocks
from gateway.response_store import ResponseStore, StoredResponse
from gateway.responses_api import PARAM_NAMES, chat_request, item_dict, new_id
from gateway.routes_chat import ChatCall
from gateway.sse import EventSseWriter, SseWriter
from gateway.state import Services
from schemas.openai_responses import (
    FunctionCallItem,
    IncompleteDetails,
    InputItem,
    InputTokensDetails,
    OutputItem,
    OutputMessage,
    OutputText,
    OutputTokensDetails,
    ReasoningItem,
    ReasoningText,
    Response,
    ResponseError,
    ResponsesRequest,
    ResponseStreamEvent,
    ResponseUsage,
    TextFormatOut,
)

_ENCODER = msgspec.json.Encoder()
log = logging.getLogger("gateway")
_ITEM_PREFIX = {"reasoning": "rs", "text": "msg", "tool_call": "fc"}


class ResponsesCall:
    """Made by the /v1/responses route per request; `respond` (generation.py) drives it like a chat call."""

    def __init__(self, services: Services, req: ResponsesRequest, history: list[InputItem], items: list[InputItem],
                 store: ResponseStore | None) -> None:  # fmt: skip
        self.services, self.req, self.history, self.items, self.store = services, req, history, items, store
        with renamed_params(PARAM_NAMES):
            self.chat = ChatCall(services, chat_request(req, history, items))
        self.id = new_id("resp")
        self.created_at = int(time.time())
        self.jobs = self.chat.jobs
        self.num_prompt_tokens = self.chat.num_prompt_tokens
        self.streaming = bool(req.stream)
        self.names = {key: PARAM_NAMES.get(value, value) for key, value in self.chat.names.items()}
        self.state = self.chat.states[0]
        self.output = ChoiceBlocks(self.state)
        self.blocks = self.output.assembler
        self.item_ids: dict[int, str] = {}
        self.sequence_number = 0

    # --- output ----------------------------------------------------------------------------

    def absorb(self, index: int, out: Any) -> None:
        self.output.absorb(out)

    def _item(self, block: Block, status: str) -> OutputItem:
        item_id = self.item_ids.get(block.index) or self.item_ids.setdefault(block.index, new_id(_ITEM_PREFIX[block.kind]))
        if block.kind == "text":
            return OutputMessage(id=item_id, status=status, content=[OutputText(text=block.text)] if block.closed else [])
        if block.kind == "tool_call":
            return FunctionCallItem(id=item_id, call_id=block.call_id, name=block.name, status=status,
                                    arguments=(block.text or "{}") if block.closed else block.text)  # fmt: skip
        return ReasoningItem(id=item_id, summary=[], status=status,
                             content=[ReasoningText(text=block.text)] if block.closed else [])  # fmt: skip

    def _usage(self) -> ResponseUsage:
        reasoning = "".join(b.text for b in self.blocks.blocks if b.kind == "reasoning")
        num_reasoning = len(self.services.pool.tokenizer.encode(reasoning, add_special_tokens=False)) if reasoning else 0
        num_output = self.state.num_tokens
        return ResponseUsage(input_tokens=self.num_prompt_tokens, output_tokens=num_output,
                             total_tokens=self.num_prompt_tokens + num_output,
                             input_tokens_details=InputTokensDetails(cached_tokens=self.state.num_cached_tokens),
                             output_tokens_details=OutputTokensDetails(reasoning_tokens=min(num_reasoning, num_output)))  # fmt: skip

    def response(self, status: str | None = None, error: ResponseError | None = None) -> Response:
        """The Response as it stands: finished (status from the finish reason) or `status`."""
        if status is None:
            status = "incomplete" if self.state.finish_reason == "length" else "completed"
        done = status in ("completed", "incomplete")
        output = [self._item(b, "incomplete" if status == "incomplete" and b is self.blocks.blocks[-1] else "completed")
                  for b in self.blocks.blocks] if done else []  # fmt: skip
        req = self.req
        return Response(
            id=self.id, created_at=self.created_at, model=self.services.model_name, status=status, output=output,
            error=error, incomplete_details=IncompleteDetails(reason="max_output_tokens") if status == "incomplete" else None,
            instructions=req.instructions, max_output_tokens=req.max_output_tokens, temperature=req.temperature,
            top_p=req.top_p, parallel_tool_calls=req.parallel_tool_calls is not False,
            previous_response_id=req.previous_response_id,
            tool_choice=msgspec.to_builtins(req.tool_choice) if req.tool_choice is not None else "auto",
            tools=msgspec.to_builtins(req.tools or []), reasoning=msgspec.to_builtins(req.reasoning),
            text=TextFormatOut(format=_format_dict(req)), store=self._stores, metadata=req.metadata or {},
            user=req.user, usage=self._usage() if done else None,
        )  # fmt: skip

    def body(self) -> Response:
        self.final = self.response()
        return self.final

    # --- the store -------------------------------------------------------------------------

    @property
    def _stores(self) -> bool:
        return self.store is not None and self.req.store is not False

    async def save(self, response: Response) -> None:
        """Keeps `response` with its input and the conversation so far (when the request stores)."""
        if not self._stores:
            return
        own = [item_dict(item) for item in self.items]
        conversation = [item_dict(item) for item in self.history] + own + msgspec.to_builtins(response.output)
        record = StoredResponse(_ENCODER.encode(response), _ENCODER.encode(own), _ENCODER.encode(conversation))
        try:
            await self.store.save(self.id, record)
        except sqlite3.Error:  # a full or broken disk: the reply still goes out, unstored
            log.exception("storing response %s failed", self.id)

    # --- streaming -------------------------------------------------------------------------

    def _event(self, type_: str, **fields: Any) -> ResponseStreamEvent:
        self.sequence_number += 1
        return ResponseStreamEvent(type=type_, sequence_number=self.sequence_number - 1, **fields)

    def _render(self, ev: BlockEvent) -> list[ResponseStreamEvent]:
        block = ev.block
        where = {"output_index": block.index, "item_id": self._item(block, "in_progress").id}
        part = {"reasoning": ReasoningText, "text": OutputText}.get(block.kind)
        parts = {"content_index": 0} if part is not None else {}
        if ev.kind == "open":
            opened = [self._event("response.output_item.added", output_index=block.index,
                                  item=self._item(block, "in_progress"))]  # fmt: skip
            if part is not None:
                opened.append(self._event("response.content_part.added", **where, **parts, part=part(text="")))
            return opened
        if ev.kind == "delta":
            name = {"reasoning": "response.reasoning_text.delta", "text": "response.output_text.delta",
                    "tool_call": "response.function_call_arguments.delta"}[block.kind]  # fmt: skip
            extra = {"logprobs": []} if block.kind == "text" else {}
            return [self._event(name, **where, **parts, delta=ev.text, **extra)]
        item = self._item(block, "completed")
        if block.kind == "tool_call":
            done = [self._event("response.function_call_arguments.done", **where, arguments=item.arguments, name=block.name)]
        else:
            name = "response.output_text.done" if block.kind == "text" else "response.reasoning_text.done"
            extra = {"logprobs": []} if block.kind == "text" else {}
            done = [self._event(name, **where, **parts, text=block.text, **extra),
                    self._event("response.content_part.done", **where, **parts, part=part(text=block.text))]  # fmt: skip
        return done + [self._event("response.output_item.done", output_index=block.index, item=item)]

    def sse(self, request) -> SseWriter:
        def failed(error: ApiError) -> ResponseStreamEvent:
            failure = ResponseError(code=error.code or "server_error", message=error.message)
            return self._event("response.failed", response=self.response("failed", failure))

        return EventSseWriter(request, failed)

    async def write_stream(self, sse: SseWriter, events: Events) -> None:
        start = self.response("in_progress")
        await sse.send_many([self._event("response.created", response=start),
                             self._event("response.in_progress", response=start)])  # fmt: skip
        async for _, out in events:
            await sse.send_many([event for ev in self.output.absorb(out) for event in self._render(ev)])
        final = self.response()
        await self.save(final)
        await sse.send(self._event(f"response.{final.status}", response=final))


def _format_dict(req: ResponsesRequest) -> dict[str, Any]:
    fmt = req.text.format if req.text is not None else None
    if fmt is None:
        return {"type": "text"}
    return {key: value for key, value in msgspec.to_builtins(fmt).items() if value is not None}
