"""Gemma 4 and FunctionGemma: `call:NAME{key:value}` calls with bare keys and string delimiters."""
from __future__ import annotations

from parsing.spec import Format, Header, Reasoning

_NAME = r"\s*call:(?P<name>[A-Za-z_][\w.\-]*)\s*"
_HEAD_CHARS = r"\w.:\- \t\r\n"

# <|channel>thought\n...<channel|> then the answer; <|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>
GEMMA4 = Format(
    name="gemma4",
    reasoning=Reasoning("<|channel>", "<channel|>", ("<|tool_call>",), label="thought\n"),
    body=Header((_NAME,), args="gemma", head_chars=_HEAD_CHARS),
    block_open=("<|tool_call>",),
    block_close="<tool_call|>",
    drop=("<turn|>",),
    token_markers=('<|"|>',),
    syntax=(("args", "json"), ("trigger", "<|tool_call>"), ("begin", "<|tool_call>call:{name}"),
            ("end", "<tool_call|>"), ("separator", "")),
)
# google/functiongemma-270m-it: <start_function_call>call:NAME{key:<escape>value<escape>}<end_function_call>
FUNCTIONGEMMA = Format(
    name="functiongemma",
    reasoning=None,
    body=Header((_NAME,), args="function_gemma", head_chars=_HEAD_CHARS),
    block_open=("<start_function_call>",),
    block_close="<end_function_call>",
    drop=("<end_of_turn>",),
    token_markers=("<escape>",),
    syntax=(("args", "json"), ("trigger", "<start_function_call>"), ("begin", "<start_function_call>call:{name}"),
            ("end", "<end_function_call>"), ("separator", "")),
)

FORMATS = (GEMMA4, FUNCTIONGEMMA)
