"""Parser events (what a stream emits) and Parsed (what they add up to)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Union


@dataclass(slots=True)
class ReasoningDelta:
    """A piece of reasoning text."""
    text: str


@dataclass(slots=True)
class ContentDelta:
    """A piece of answer text."""
    text: str


@dataclass(slots=True)
class ToolCallStart:
    """A tool call begins: its 0-based index in the message, its id and its complete name."""
    index: int
    id: str
    name: str


@dataclass(slots=True)
class ToolCallArgs:
    """A fragment of a call's arguments JSON; the fragments of one index concatenate to it."""
    index: int
    text: str


Event = Union[ReasoningDelta, ContentDelta, ToolCallStart, ToolCallArgs]


@dataclass(slots=True)
class ToolCall:
    """One finished tool call; `arguments` is a JSON object text."""
    id: str
    name: str
    arguments: str


@dataclass(slots=True)
class Parsed:
    """The whole result: reasoning and content are None when empty."""
    reasoning: str | None = None
    content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)


def collect(events: Iterable[Event]) -> Parsed:
    """Accumulate events (of any chunking) into the Parsed result."""
    reasoning: list[str] = []
    content: list[str] = []
    names: dict[int, tuple[str, str]] = {}
    args: dict[int, list[str]] = {}
    for ev in events:
        kind = type(ev)
        if kind is ContentDelta:
            content.append(ev.text)
        elif kind is ReasoningDelta:
            reasoning.append(ev.text)
        elif kind is ToolCallArgs:
            args.setdefault(ev.index, []).append(ev.text)
        elif kind is ToolCallStart:
            names[ev.index] = (ev.id, ev.name)
            args.setdefault(ev.index, [])
    calls = [
        ToolCall(id=names[i][0], name=names[i][1], arguments="".join(args[i]) or "{}")
        for i in sorted(names)
    ]
    return Parsed(reasoning="".join(reasoning) or None, content="".join(content) or None, tool_calls=calls)
