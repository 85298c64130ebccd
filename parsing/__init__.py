"""Streaming parser of model output: text deltas in, reasoning/content/tool-call events out.

    s = parsing.open_stream("hermes", tools)
    for delta in deltas: events += s.feed(delta)
    events += s.close()
    parsing.collect(events) == parsing.parse(whole_text, "hermes", tools)
"""
from __future__ import annotations

from parsing.compiled import COMPILED, COMPILED_NO_CALLS, Compiled, reader_factory
from parsing.detect import detect_format
from parsing.events import (ContentDelta, Event, Parsed, ReasoningDelta, ToolCall, ToolCallArgs,
                            ToolCallStart, collect)
from parsing.formats import NAMES
from parsing.sink import Sink
from parsing.stream import ParserStream

__all__ = [
    "ContentDelta", "Event", "Parsed", "ParserStream", "ReasoningDelta", "ToolCall",
    "ToolCallArgs", "ToolCallStart", "call_syntax", "collect", "detect_format", "formats",
    "open_stream", "parse", "reasoning_tags",
]


def formats() -> list[str]:
    """The names of all supported formats."""
    return list(NAMES)


def _compiled(format: str, calls: bool = True) -> Compiled:
    try:
        return (COMPILED if calls else COMPILED_NO_CALLS)[format]
    except KeyError:
        raise ValueError(f"unknown parser format {format!r}; known: {', '.join(NAMES)}") from None


def open_stream(format: str, tools: list[dict] | None = None, starts_in_reasoning: bool = False,
                *, calls: bool = True) -> ParserStream:
    """Start parsing one model output in `format`; `tools` type XML-style argument values.

    `starts_in_reasoning`: the prompt already opened the reasoning section. `calls=False`
    (tool_choice "none") leaves tool-call markup in the content, unparsed.
    """
    c = _compiled(format, calls)
    sink = Sink(c.machine.fmt.id_style)
    return ParserStream(c.machine, reader_factory(c, tools), sink, starts_in_reasoning)


def parse(text: str, format: str, tools: list[dict] | None = None,
          starts_in_reasoning: bool = False, *, calls: bool = True) -> Parsed:
    """Parse a whole output at once; equal to collecting the events of any chunking."""
    s = open_stream(format, tools, starts_in_reasoning, calls=calls)
    return collect(s.feed(text) + s.close())


def call_syntax(format: str) -> dict | None:
    """A format's tool-call syntax as plain data, for building a structural-tag constraint.

    Keys: `args` ("json" or "xml"), `trigger` (the text that starts calls), `begin` and `end`
    (per call, with `{name}` and for kimi `{index}` placeholders), `separator` (between
    calls), optional `block_begin`/`block_end` (around all calls), and for xml `param_begin`
    / `param_end` (with `{key}`, and `{string}` for DSML). None when the format has no calls.
    """
    syntax = _compiled(format).machine.fmt.syntax
    return dict(syntax) if syntax else None


def reasoning_tags(format: str) -> tuple[str, str] | None:
    """The (open, close) reasoning tags of a format, or None (gpt-oss uses channels)."""
    r = _compiled(format).machine.fmt.reasoning
    return (r.open, r.close) if r else None
