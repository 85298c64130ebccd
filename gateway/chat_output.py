"""The seam where generated text becomes chat deltas: plain content, or reasoning/tool calls via parsing/.

Streaming and non-streaming both go through `open_output(...).feed/close`; the
non-streaming reply is the `MessageBuilder` sum of the same deltas, so they agree.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any, Protocol

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
            setattr(delta, reasoning_field, self.reasoning)
        if self.tool_calls:
            delta.tool_calls = [_tool_delta(part) for part in self.tool_calls]
        return delta


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
    """Turns one choice's text deltas into chat deltas; `close()` flushes what was held back."""

    num_tool_calls: int

    def feed(self, text: str) -> DeltaParts: ...

    def close(self) -> DeltaParts: ...


class PlainOutput:
    """No parser configured: every byte of text is content."""

    num_tool_calls = 0

    def feed(self, text: str) -> DeltaParts:
        return DeltaParts(content=text)

    def close(self) -> DeltaParts:
        return DeltaParts()


class ParsedOutput:
    """Adapts a `parsing.open_stream(...)` stream: its events become DeltaParts."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._ids: dict[int, str] = {}
        self.num_tool_calls = 0

    def feed(self, text: str) -> DeltaParts:
        return self._convert(self._stream.feed(text))

    def close(self) -> DeltaParts:
        return self._convert(self._stream.close() or [])

    def _convert(self, events: list[Any]) -> DeltaParts:
        parts = DeltaParts()
        for event in events:
            kind = _event_kind(event)
            if kind == "content":
                parts.content += _event_text(event)
            elif kind == "reasoning":
                parts.reasoning += _event_text(event)
            elif kind == "tool_call":
                parts.tool_calls.append(self._tool_part(event))
        return parts

    def _tool_part(self, event: Any) -> ToolCallPart:
        index = int(getattr(event, "index", self.num_tool_calls))
        name = getattr(event, "name", None)
        arguments = getattr(event, "arguments", None) or getattr(event, "arguments_delta", None) or ""
        if name is not None and index not in self._ids:
            self._ids[index] = getattr(event, "id", None) or f"call_{secrets.token_hex(12)}"
            self.num_tool_calls = max(self.num_tool_calls, index + 1)
            return ToolCallPart(index=index, id=self._ids[index], name=name, arguments=arguments)
        return ToolCallPart(index=index, arguments=arguments)


def _event_kind(event: Any) -> str:
    kind = str(getattr(event, "kind", None) or getattr(event, "type", None) or type(event).__name__).lower()
    if "reason" in kind or "think" in kind:
        return "reasoning"
    if "tool" in kind or "call" in kind:
        return "tool_call"
    return "content"


def _event_text(event: Any) -> str:
    for name in ("text", "delta", "content"):
        value = getattr(event, name, None)
        if isinstance(value, str):
            return value
    return ""


@dataclass(frozen=True, slots=True)
class ParserConfig:
    """Which output formats to parse; from the CLI's --tool-parser / --reasoning-parser."""

    tool_parser: str | None = None
    reasoning_parser: str | None = None
    model_hint: str = ""


def open_output(config: ParserConfig, tools: list[dict] | None, starts_in_reasoning: bool) -> OutputStream:
    """The output stream for one choice: parsed when a parser is configured and parsing/ is there."""
    fmt = config.tool_parser if tools else None
    fmt = fmt or config.reasoning_parser
    if not fmt:
        return PlainOutput()
    try:
        import parsing
    except ImportError:
        return PlainOutput()
    open_stream = getattr(parsing, "open_stream", None)
    if open_stream is None:
        return PlainOutput()
    if fmt == "auto":
        fmt = config.model_hint
    return ParsedOutput(open_stream(fmt, tools or [], starts_in_reasoning))


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
            message[self.reasoning_field] = self.parts.reasoning
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
