"""Sink: collects one stream's events, trims text segments and numbers the tool calls."""
from __future__ import annotations

import base64
import os

from parsing.events import ContentDelta, Event, ReasoningDelta, ToolCallArgs, ToolCallStart
from parsing.machine import CONTENT, REASONING

ARGS = 2  # event codes: REASONING, CONTENT (the scanner's own state numbers), ARGS + call index


class Sink:
    """Owned by one ParserStream; its readers call it as they recognise pieces of output.

    Text arrives in segments (a stretch of one kind between two structural markers).
    Whitespace at the start of the first segment of each kind is dropped; whitespace at the
    end of every segment is held until more text of the segment shows it is inner
    whitespace, so framing newlines never reach the client.
    """

    __slots__ = ("events", "num_calls", "id_style", "_kind", "_open", "_ws", "_had", "_parts", "_last", "_sep")

    def __init__(self, id_style: str) -> None:
        self.events: list[Event] = []
        self.num_calls = 0
        self.id_style = id_style
        self._kind = -1
        self._open = False
        self._ws: list[str] = []  # trailing whitespace of the segment, not yet sent
        self._parts: list[str] = []  # text of the last event, joined when it is handed out
        self._had = [False, False]  # [kind]: a segment of this kind already had text
        self._last = -1  # code of the last event, while more text may merge into it
        self._sep = ["", ""]  # [kind]: text put before the next segment of this kind, if it has text

    def take(self) -> list[Event]:
        """Hand out the events made so far (called once per feed or close)."""
        if len(self._parts) > 1:
            self.events[-1].text = "".join(self._parts)
        self._parts = []
        self._last = -1
        events, self.events = self.events, []
        return events

    def _seal(self) -> None:
        if len(self._parts) > 1:
            self.events[-1].text = "".join(self._parts)
        self._parts = []

    def text(self, kind: int, text: str) -> None:
        """Add reasoning (kind 0) or content (kind 1) text to the current segment."""
        if not text:
            return
        if kind == self._kind and self._open:  # inside a segment: only trailing space is held
            if not text[-1].isspace():
                if self._ws:
                    text = "".join(self._ws) + text
                    self._ws = []
                self._push(kind, text)
                return
        else:
            if kind != self._kind:
                self.end_segment()
                self._kind = kind
            if not self._had[kind]:
                text = text.lstrip()
                if not text:
                    return
            elif self._sep[kind]:
                text, self._sep[kind] = self._sep[kind] + text, ""
            self._open = True
        stripped = text.rstrip()
        if not stripped:
            self._ws.append(text)
            return
        body = "".join(self._ws) + stripped if self._ws else stripped
        self._ws = [text[len(stripped):]] if len(stripped) < len(text) else []
        self._had[kind] = True
        self._push(kind, body)

    def separate(self, kind: int, sep: str = "\n") -> None:
        """The next segment of `kind` starts a new message: `sep` joins it to the text before."""
        self._sep[kind] = sep

    def end_segment(self) -> None:
        """A marker (or the end of output) ends the current text segment."""
        self._open = False
        self._ws = []
        self._kind = -1

    def start_call(self, name: str, call_id: str | None = None) -> int:
        """Announce a call with its complete name; returns its index."""
        self.end_segment()
        index = self.num_calls
        self.num_calls += 1
        self._seal()
        self.events.append(ToolCallStart(index, call_id or self.new_id(), name))
        self._last = -1
        return index

    def args(self, text: str) -> None:
        """Add a fragment of the current call's arguments."""
        if text:
            self._push(ARGS + self.num_calls - 1, text)

    def new_id(self) -> str:
        """A fresh random call id: 9 alphanumerics for Mistral, else call_ + 24."""
        if self.id_style == "mistral":
            return _random_alnum(9)
        return "call_" + _random_alnum(24)

    def _push(self, code: int, text: str) -> None:
        """Append text as an event of `code` (0 reasoning, 1 content, ARGS + call index),
        merged with the previous event when it has the same code."""
        if code == self._last:
            self._parts.append(text)
            return
        if len(self._parts) > 1:
            self.events[-1].text = "".join(self._parts)
        if code >= ARGS:
            self.events.append(ToolCallArgs(code - ARGS, text))
        else:
            self.events.append(ReasoningDelta(text) if code == REASONING else ContentDelta(text))
        self._parts = [text]
        self._last = code


def _random_alnum(n: int) -> str:
    """n random characters from A-Z and 2-7 (base32 of system randomness)."""
    return base64.b32encode(os.urandom((n * 5 + 7) // 8)).decode()[:n]
