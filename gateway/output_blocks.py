"""One choice's DeltaParts as an ordered list of output blocks (reasoning, text, tool call), with the
open / delta / close events that the Responses and Messages APIs render as their own stream events.

Chat streams DeltaParts as they come; the item-based APIs need each run of one kind to be a
block with a beginning and an end. This is the one place that cuts the parser's deltas into
blocks: a change of kind closes the open block and opens the next; a tool call's arguments go
to its own block. Streaming and whole replies feed the same assembler, so they agree.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from gateway.chat_output import DeltaParts

Kind = Literal["reasoning", "text", "tool_call"]


@dataclass(slots=True)
class Block:
    """One output block: its text (the arguments' JSON text for a tool call) and, for a call, id and name."""

    index: int
    kind: Kind
    text: str = ""
    call_id: str = ""
    name: str = ""
    closed: bool = False


@dataclass(slots=True)
class BlockEvent:
    """`open` (text empty), `delta` (the new text) or `close` of `block`."""

    kind: Literal["open", "delta", "close"]
    block: Block
    text: str = ""


@dataclass(slots=True)
class BlockAssembler:
    """Fed by the Responses and Messages calls with each DeltaParts of their one choice; `finish`
    closes the last block. `blocks` is the whole output in order."""

    blocks: list[Block] = field(default_factory=list)
    _calls: dict[int, Block] = field(default_factory=dict)  # parser call index -> its block

    @property
    def open_block(self) -> Block | None:
        return self.blocks[-1] if self.blocks and not self.blocks[-1].closed else None

    def feed(self, parts: DeltaParts) -> list[BlockEvent]:
        events: list[BlockEvent] = []
        if parts.reasoning:
            self._text("reasoning", parts.reasoning, events)
        if parts.content:
            self._text("text", parts.content, events)
        for part in parts.tool_calls:
            block = self._calls.get(part.index)
            if block is None:
                self._close(events)
                call_id = part.id or f"call_{uuid.uuid4().hex[:24]}"
                block = self._open("tool_call", events, call_id=call_id, name=part.name or "")
                self._calls[part.index] = block
            if part.arguments:
                block.text += part.arguments
                events.append(BlockEvent("delta", block, part.arguments))
        return events

    def finish(self) -> list[BlockEvent]:
        events: list[BlockEvent] = []
        self._close(events)
        return events

    def _text(self, kind: Kind, text: str, events: list[BlockEvent]) -> None:
        block = self.open_block
        if block is None or block.kind != kind:
            self._close(events)
            block = self._open(kind, events)
        block.text += text
        events.append(BlockEvent("delta", block, text))

    def _open(self, kind: Kind, events: list[BlockEvent], **meta: str) -> Block:
        block = Block(index=len(self.blocks), kind=kind, **meta)
        self.blocks.append(block)
        events.append(BlockEvent("open", block))
        return block

    def _close(self, events: list[BlockEvent]) -> None:
        block = self.open_block
        if block is not None:
            block.closed = True
            events.append(BlockEvent("close", block))


@dataclass(slots=True)
class ChoiceBlocks:
    """A Responses or Messages call's one choice (`state`, chat's ChoiceState) as blocks: `absorb` is
    called with each engine output and returns the block events it made (the last block closes
    when the choice finishes)."""

    state: Any
    assembler: BlockAssembler = field(default_factory=BlockAssembler)

    def absorb(self, out: Any) -> list[BlockEvent]:
        parts, _ = self.state.absorb(out)
        events = self.assembler.feed(parts)
        if self.state.finish_reason is not None:
            events += self.assembler.finish()
        return events
