"""Kimi K2 format: a tool-call section with `functions.NAME:IDX` ids and JSON arguments."""
from __future__ import annotations

from parsing.spec import Format, Header, Reasoning

SECTION = "<|tool_calls_section_begin|>"
SECTION_ALT = "<|tool_call_section_begin|>"
SECTION_END = "<|tool_calls_section_end|>"
CALL, CALL_END = "<|tool_call_begin|>", "<|tool_call_end|>"
ARGS = "<|tool_call_argument_begin|>"

KIMI_K2 = Format(
    name="kimi_k2",
    reasoning=Reasoning("<think>", "</think>", (SECTION, SECTION_ALT, CALL)),
    body=Header((
        # a bare counter or a client-style id: the name is guessed from the arguments and the tools
        r"\s*(?P<id>\d+|call_[A-Za-z0-9_\-]+)\s*<\|tool_call_argument_begin\|>\s*",
        r"\s*(?P<id>(?:functions\.)?(?P<name>[A-Za-z_][^\s:<]*?)(?::\d+)?)\s*<\|tool_call_argument_begin\|>\s*",
    )),
    block_open=(SECTION, SECTION_ALT),
    block_close=SECTION_END,
    call_open=(CALL,),
    call_close=CALL_END,
    drop=("<|im_end|>",),
    token_markers=(ARGS,),
    syntax=(("args", "json"), ("trigger", SECTION), ("block_begin", SECTION),
            ("begin", CALL + "functions.{name}:{index}" + ARGS), ("end", CALL_END),
            ("separator", ""), ("block_end", SECTION_END)),
)

FORMATS = (KIMI_K2,)
