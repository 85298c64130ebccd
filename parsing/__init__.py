"""Streaming parser of model output: text deltas in, reasoning/content/tool-call events out.

    s = parsing.open_stream("hermes", tools)
    for delta in deltas: events += s.feed(delta)
    events += s.close()
    parsing.collect(events) == parsing.parse(whole_text, "hermes", tools)
"""
from __future__ import annotations

from typing import Mapping

from parsing.compiled import COMPILED, COMPILED_NO_CALLS, Compiled, reader_factory, special_markers
from parsing.detect import detect_format
from parsing.events import (ContentDelta, Event, Parsed, ReasoningDelta, ToolCall, ToolCallArgs,
                            ToolCallStart, collect)
from parsing.formats import NAMES
from parsing.sink import Sink
from parsing.stream import ParserStream

__all__ = [
    "ContentDelta", "Event", "Parsed", "ParserStream", "ReasoningDelta", "ToolCall",
    "ToolCallArgs", "ToolCallStart", "call_syntax", "collect", "detect_format", "formats",
    "marker_tokens", "open_stream", "parse", "prompt_opens_reasoning", "reasoning_tags",
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
                *, calls: bool = True, marker_ids: Mapping[int, str] | None = None) -> ParserStream:
    """Start parsing one model output in `format`; `tools` type XML-style argument values.

    `starts_in_reasoning`: the prompt already opened the reasoning section. `calls=False`
    (tool_choice "none") leaves tool-call markup in the content, unparsed. `marker_ids` maps
    the token ids of the format's markers (`marker_tokens`) to their text, so that
    `feed(text, token_ids)` recognises a marker whose token the detokenizer skipped.
    """
    c = _compiled(format, calls)
    sink = Sink(c.machine.fmt.id_style)
    return ParserStream(c.machine, reader_factory(c, tools), sink, starts_in_reasoning, marker_ids)


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


def marker_tokens(format: str) -> tuple[str, ...]:
    """The marker strings of a format that a tokenizer may hold as single (control) tokens;
    map the ones that are special tokens to their ids for `open_stream(marker_ids=...)`."""
    return special_markers(_compiled(format))


def prompt_opens_reasoning(format: str, prompt: str) -> bool:
    """True when the rendered prompt ends inside the format's reasoning section (its open
    tag is the prompt's last text), so the output starts in reasoning."""
    r = _compiled(format).machine.fmt.reasoning
    if r is None:
        return False
    tail = prompt.rstrip()
    return r.starts_open or any(tail.endswith(tag) for tag in r.opens)


def reasoning_tags(format: str) -> tuple[str, str] | None:
    """The (open, close) reasoning tags of a format, or None (gpt-oss uses channels)."""
    r = _compiled(format).machine.fmt.reasoning
    return (r.open, r.close) if r else None
