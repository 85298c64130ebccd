"""Pythonic call formats: pythonic (Llama 3.2, ToolACE), llama4_pythonic, olmo3 and lfm2."""
from __future__ import annotations

from parsing.spec import Format, Header, Reasoning

_NAME = r"\s*(?P<name>[A-Za-z_][\w.\-]*)\s*"
_HEAD_CHARS = r"\w.\- \t\r\n"  # what may stand before a call's "(": its name and spaces
_LIST = Header((_NAME,), args="python", head_chars=_HEAD_CHARS, list_open="[", list_close="]", separators=",")

# Constrained decoding writes a call's arguments as one JSON dict, which is Python too:
# [get_weather(**{"city": "Paris"})]
_LIST_SYNTAX = (("args", "json"), ("trigger", "["), ("block_begin", "["), ("begin", "{name}(**"),
                ("end", ")"), ("separator", ", "), ("block_end", "]"))

# [get_weather(city="Paris"), get_time()] as the whole answer
PYTHONIC = Format(
    name="pythonic",
    reasoning=None,
    body=_LIST,
    keep_triggers=("[",),
    drop=("<|eot_id|>", "<|eom_id|>"),
    syntax=_LIST_SYNTAX,
)
# Llama 4 writes the same list, sometimes inside <|python_start|> .. <|python_end|>
LLAMA4_PYTHONIC = Format(
    name="llama4_pythonic",
    reasoning=None,
    body=_LIST,
    start_triggers=("<|python_start|>",),
    block_close="<|python_end|>",
    keep_triggers=("[",),
    drop=("<|eot|>", "<|eom|>"),
    syntax=_LIST_SYNTAX,
)
# Olmo 3: one call per line inside <function_calls> .. </function_calls>; values may be
# JSON's true/false/null
OLMO3 = Format(
    name="olmo3",
    reasoning=Reasoning("<think>", "</think>"),
    body=Header((_NAME,), args="python", head_chars=_HEAD_CHARS, separators="\n"),
    block_open=("<function_calls>",),
    block_close="</function_calls>",
    drop=("<|im_end|>", "<|endoftext|>"),
    syntax=(("args", "json"), ("trigger", "<function_calls>"), ("block_begin", "<function_calls>\n"),
            ("begin", "{name}(**"), ("end", ")"), ("separator", "\n"), ("block_end", "\n</function_calls>")),
)

# LiquidAI LFM2 / LFM2.5: the pythonic list inside <|tool_call_start|> .. <|tool_call_end|>
LFM2 = Format(
    name="lfm2",
    reasoning=Reasoning("<think>", "</think>"),
    body=_LIST,
    block_open=("<|tool_call_start|>",),
    block_close="<|tool_call_end|>",
    drop=("<|im_end|>",),
    syntax=(("args", "json"), ("trigger", "<|tool_call_start|>"), ("block_begin", "<|tool_call_start|>["),
            ("begin", "{name}(**"), ("end", ")"), ("separator", ", "), ("block_end", "]<|tool_call_end|>")),
)

FORMATS = (PYTHONIC, LLAMA4_PYTHONIC, OLMO3, LFM2)
