"""output_blocks: DeltaParts cut into ordered blocks with open / delta / close events, whatever the chunking."""

from __future__ import annotations

import pytest

from gateway.chat_output import DeltaParts, ToolCallPart
from gateway.errors import ApiError, renamed_params
from gateway.output_blocks import BlockAssembler

STREAM = [
    DeltaParts(reasoning="Think"), DeltaParts(reasoning="ing."), DeltaParts(content="Let me "),
    DeltaParts(content="check.", tool_calls=[ToolCallPart(index=0, id="call_a", name="f")]),
    DeltaParts(tool_calls=[ToolCallPart(index=0, arguments='{"x": '), ToolCallPart(index=0, arguments="1}")]),
    DeltaParts(tool_calls=[ToolCallPart(index=1, id="call_b", name="g", arguments="{}")]),
    DeltaParts(content="Done."),
]  # fmt: skip


def test_blocks_in_order_with_balanced_events():
    assembler = BlockAssembler()
    events = [e for parts in STREAM for e in assembler.feed(parts)] + assembler.finish()
    blocks = [(b.kind, b.text, b.call_id, b.name) for b in assembler.blocks]
    assert blocks == [("reasoning", "Thinking.", "", ""), ("text", "Let me check.", "", ""),
                      ("tool_call", '{"x": 1}', "call_a", "f"), ("tool_call", "{}", "call_b", "g"),
                      ("text", "Done.", "", "")]  # fmt: skip
    opened = [e.block.index for e in events if e.kind == "open"]
    closed = [e.block.index for e in events if e.kind == "close"]
    assert opened == closed == [0, 1, 2, 3, 4] and all(b.closed for b in assembler.blocks)
    for block in assembler.blocks:  # each block's deltas sum to its text, between its open and its close
        mine = [e for e in events if e.block is block]
        assert mine[0].kind == "open" and mine[-1].kind == "close"
        assert "".join(e.text for e in mine if e.kind == "delta") == block.text
    assert assembler.finish() == []


def test_one_chunk_or_many_give_the_same_blocks():
    whole = DeltaParts()
    for parts in STREAM[:3]:
        whole.extend(parts)
    one, many = BlockAssembler(), BlockAssembler()
    one.feed(whole)
    for parts in STREAM[:3]:
        many.feed(parts)
    assert [(b.kind, b.text) for b in one.blocks] == [(b.kind, b.text) for b in many.blocks]


def test_renamed_params_name_the_front_doors_field():
    with pytest.raises(ApiError) as err, renamed_params({"messages": "input", "response_format": "text.format"}):
        raise ApiError(400, "messages[2]: content part type 'image' is not supported", param="messages")
    assert err.value.param == "input" and err.value.message.startswith("input[2]:")
    with pytest.raises(ApiError) as err, renamed_params({"messages": "input"}):
        raise ApiError(400, "tool_choice needs tools", param="tool_choice")
    assert err.value.param == "tool_choice"
