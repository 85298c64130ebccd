"""The seam where generated text becomes chat deltas: plain content, or reasoning/tool calls via parsing/.

Streaming and non-streaming both go through `open_output(...).feed/close`; the
non-streaming reply is the `MessageBuilder` sum of the same deltas, so they agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

import parsing
from gateway.parser_config import ParserConfig
from schemas.openai import ChatDelta, FunctionDelta, ToolCallDelta


@dataclass(slots=True)
class ToolCallPart:
    """A fragment of one tool call: the first carries id and name, later ones only arguments."""

    index: int
    arguments: str = ""
    id: str | None = None
    name: str | None = None


@dataclass(slots=True)
class DeltaParts:
    content: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCallPart] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.content or self.reasoning or self.tool_calls)

    def extend(self, other: DeltaParts) -> None:
        self.content += other.content
        self.reasoning += other.reasoning
        self.tool_calls.extend(other.tool_calls)

    def to_delta(self, reasoning_field: str) -> ChatDelta:
        delta = ChatDelta(content=self.content or None)
        if self.reasoning:
            for name in reasoning_fields(reasoning_field):
                setattr(delta, name, self.reasoning)
        if self.tool_calls:
            delta.tool_calls = [_tool_delta(part) for part in self.tool_calls]
        return delta


def reasoning_fields(setting: str) -> tuple[str, ...]:
    """The message fields that carry reasoning under `--reasoning-field` (`both` = the two names)."""
    return ("reasoning_content", "reasoning") if setting == "both" else (setting,)


def _tool_delta(part: ToolCallPart) -> ToolCallDelta:
    if part.name is not None:
        return ToolCallDelta(
            index=part.index,
            id=part.id,
            type="function",
            function=FunctionDelta(name=part.name, arguments=part.arguments),
        )
    return ToolCallDelta(index=part.index, function=FunctionDelta(arguments=part.arguments))


class OutputStream(Protocol):
    """Turns one choice's text deltas into chat deltas; `close()` flushes what was held back.
    `token_ids` are the delta's tokens (a marker the detokenizer skipped is known by its id)."""

    num_tool_calls: int

    def feed(self, text: str, token_ids: Sequence[int] | None = None) -> DeltaParts: ...

    def close(self) -> DeltaParts: ...


class PlainOutput:
    """No parser configured: every byte of text is content."""

    num_tool_calls = 0

    def feed(self, text: str, token_ids: Sequence[int] | None = None) -> DeltaParts:
        return DeltaParts(content=text)

    def close(self) -> DeltaParts:
        return DeltaParts()


class ParsedOutput:
    """Adapts a `parsing.open_stream(...)` stream: its events become DeltaParts.

    `max_calls` (1 under `parallel_tool_calls: false`) drops the calls after that many: the
    text of a dropped call is neither content nor a call."""

    def __init__(self, stream: Any, max_calls: int | None = None) -> None:
        self._events = parsing
        self._stream = stream
        self._max_calls = max_calls
        self.num_tool_calls = 0

    def feed(self, text: str, token_ids: Sequence[int] | None = None) -> DeltaParts:
        return self._convert(self._stream.feed(text, token_ids))

    def close(self) -> DeltaParts:
        return self._convert(self._stream.close())

    def _convert(self, events: list[Any]) -> DeltaParts:
        ev = self._events
        parts = DeltaParts()
        for event in events:
            if self._max_calls is not None and getattr(event, "index", -1) >= self._max_calls:
                continue
            if isinstance(event, ev.ContentDelta):
                parts.content += event.text
            elif isinstance(event, ev.ReasoningDelta):
                parts.reasoning += event.text
            elif isinstance(event, ev.ToolCallStart):
                self.num_tool_calls = max(self.num_tool_calls, event.index + 1)
                parts.tool_calls.append(ToolCallPart(index=event.index, id=event.id, name=event.name))
            elif isinstance(event, ev.ToolCallArgs):
                _add_arguments(parts.tool_calls, event.index, event.text)
        return parts


def _add_arguments(calls: list[ToolCallPart], index: int, text: str) -> None:
    """Arguments join the same call's last fragment in this delta, else start a new fragment."""
    if calls and calls[-1].index == index:
        calls[-1].arguments += text
    else:
        calls.append(ToolCallPart(index=index, arguments=text))


def open_output(config: ParserConfig, tools: list[dict] | None, prompt: str,
                max_calls: int | None = None) -> OutputStream:
    """The output stream for one choice. The tool parser runs when the request offers tools;
    the reasoning parser otherwise, leaving call markup in the content; with neither, all
    text is content. The output starts in reasoning where the rendered `prompt` ends inside
    the chosen format's reasoning section. At most `max_calls` tool calls are reported."""
    calls = bool(tools) and config.tool_parser is not None
    fmt = config.tool_parser if calls else config.reasoning_parser
    if not fmt:
        return PlainOutput()
    stream = parsing.open_stream(fmt, tools or [], parsing.prompt_opens_reasoning(fmt, prompt), calls=calls,
                                 marker_ids=config.marker_ids.get(fmt))
    return ParsedOutput(stream, max_calls)


class MessageBuilder:
    """Sums one choice's DeltaParts into the non-streaming assistant message."""

    def __init__(self, reasoning_field: str) -> None:
        self.reasoning_field = reasoning_field
        self.parts = DeltaParts()
        self.calls: dict[int, dict[str, Any]] = {}

    def add(self, parts: DeltaParts) -> None:
        self.parts.content += parts.content
        self.parts.reasoning += parts.reasoning
        for part in parts.tool_calls:
            call = self.calls.setdefault(part.index, {"id": part.id, "name": part.name, "arguments": ""})
            call["arguments"] += part.arguments
            if part.name is not None:
                call["id"], call["name"] = part.id, part.name

    def message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.parts.content or None}
        if self.parts.reasoning:
            for name in reasoning_fields(self.reasoning_field):
                message[name] = self.parts.reasoning
        if self.calls:
            message["tool_calls"] = [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": call["arguments"] or "{}"},
                }
                for _, call in sorted(self.calls.items())
            ]
        return message
