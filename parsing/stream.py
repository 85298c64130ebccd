"""ParserStream: the one scanner loop that turns text deltas into parser events."""
from __future__ import annotations

from typing import Callable, Mapping, Protocol, Sequence

from parsing import machine as M
from parsing.events import Event
from parsing.json_calls import BLOCK_END, CALL_END, NOT_A_CALL
from parsing.sink import Sink

_WS = " \t\r\n"


class Reader(Protocol):
    """A call-body reader: consumes text, emits through the sink, then sets `outcome`.

    `state` names its inner state; a step that consumes nothing must change it (a
    zero-width transition) or mean that the reader waits for more text.
    """
    outcome: str | None
    state: str

    def step(self, buf: str, pos: int, final: bool) -> int: ...
    def finish(self) -> None: ...
    def fast(self, text: str) -> bool: ...  # consumed whole as plain argument text (a fast path)


class ParserStream:
    """One request's parser. The gateway calls feed() with each detokenized delta and
    close() once at the end of output; both return the events that became certain.

    Only a tail that could still grow into a marker is kept between calls (plus whatever a
    call reader needs to decide a value's end), so each character is scanned a bounded
    number of times.
    """

    __slots__ = ("_m", "_sink", "_state", "_reader", "_pending", "_starts", "_final",
                 "_in_block", "_new_reader", "_closed", "_calls_before", "_marker_ids", "_prefix")

    def __init__(self, m: M.Machine, new_reader: Callable[[Sink, str, str], Reader], sink: Sink,
                 starts_in_reasoning: bool, marker_ids: Mapping[int, str] | None = None) -> None:
        self._m = m
        self._new_reader = new_reader  # (sink, action, marker) -> the reader of a call body
        self._sink = sink
        r = m.fmt.reasoning
        in_reasoning = r is not None and (starts_in_reasoning or r.starts_open)
        self._state = M.REASONING if in_reasoning else M.CONTENT
        self._reader: Reader | None = None
        self._pending = ""
        # first-text triggers still possible (None once text has started)
        self._starts: tuple[tuple[str, str], ...] | None = m.starts[self._state]
        self._marker_ids = marker_ids or {}  # token id -> marker, for markers skipped in the text
        self._prefix = m.fmt.content_prefix
        self._final = False
        self._in_block = False
        self._closed = False
        self._calls_before = 0  # calls started before the current reader

    @property
    def num_calls(self) -> int:
        """Tool calls started so far (finish_reason is "tool_calls" when this is not 0)."""
        return self._sink.num_calls

    @property
    def num_held(self) -> int:
        """Characters held back so far because they could still start a marker."""
        return len(self._pending)

    def feed(self, text: str, token_ids: Sequence[int] | None = None) -> list[Event]:
        """Scan one delta of any size; returns the events it made certain.

        `token_ids` are the delta's tokens: a marker whose token the detokenizer skipped
        (a control token under skip_special_tokens) is recognised from its id.
        """
        if self._closed:
            raise RuntimeError("feed() after close()")
        if token_ids and self._marker_ids:
            text = with_markers(text, token_ids, self._marker_ids)
        if self._prefix and text:
            self._sink.text(M.CONTENT, self._prefix)
            self._sink.end_segment()
            self._prefix = ""
        state = self._state
        if not self._pending and text:
            if state <= M.CONTENT:
                if self._starts is None and self._m.lexicons[state].starts_search(text) is None:
                    self._sink.text(state, text)  # fast path: plain text (REASONING and CONTENT
                    return self._sink.take()      # share codes with the sink)
            elif state == M.READER and self._reader.fast(text):  # fast path: inside a string value
                return self._sink.take()
        if text:
            buf = self._pending + text if self._pending else text
            self._pending = buf[self._run(buf):]
        return self._sink.take()

    def close(self) -> list[Event]:
        """End of output: release held-back text and close a cut-off call cleanly."""
        if self._closed:
            return []
        self._final = True
        buf, self._pending = self._pending, ""
        self._run(buf)
        if self._state == M.READER:
            self._reader.finish()
        self._sink.end_segment()
        self._closed = True
        return self._sink.take()

    def _run(self, buf: str) -> int:
        pos, n = 0, len(buf)
        while pos < n:
            state, reader = self._state, self._reader
            if state == M.READER:
                inner = reader.state
                new = reader.step(buf, pos, self._final)
                if reader.outcome is not None:
                    self._after_reader(reader.outcome)
                elif new == pos and reader.state != inner:
                    continue
            else:
                new = self._text_step(buf, pos, state)
            if new == pos and self._state == state and self._reader is reader:
                break
            pos = new
        return pos

    def _emit(self, state: int, text: str) -> None:
        if state <= M.CONTENT:  # text of other states (between calls, skipped framing) is noise
            self._sink.text(state, text)

    def _text_step(self, buf: str, pos: int, state: int) -> int:
        if self._starts is not None and state <= M.CONTENT:
            p = pos
            while p < len(buf) and buf[p] in _WS:
                p += 1
            if p == len(buf):
                return p
            for trigger, action in self._starts:
                if buf.startswith(trigger, p):
                    if action != M.DROP:  # dropped framing: the start is still to come
                        self._starts = None
                    return self._act(action, state, buf, p, trigger)
                if not self._final and trigger.startswith(buf[p:]):
                    return p
            self._starts = None
            pos = p
        lex = self._m.lexicons[state]
        first = lex.first_start(buf, pos)
        if first < 0:  # fast path: nothing here can begin a marker
            self._emit(state, buf[pos:] if pos else buf)
            return len(buf)
        hit = lex.search(buf, first)
        if hit is not None:
            start, marker = hit
            if not self._final and lex.may_grow(buf, start):
                self._emit(state, buf[pos:start])
                return start
            self._emit(state, buf[pos:start])
            action = self._m.actions[state][marker]
            if action != M.DROP:
                self._sink.end_segment()
            return self._act(action, state, buf, start, marker)
        end = len(buf) if self._final else lex.hold_start(buf, first)
        self._emit(state, buf[pos:end])
        return end

    def _act(self, action: str, state: int, buf: str, start: int, marker: str) -> int:
        end = start + len(marker)
        if action == M.DROP:
            return end
        if action == M.TO_REASONING:
            self._state = M.REASONING
            self._starts = self._m.starts[M.REASONING] or None  # a duplicate open tag, a label
        elif action == M.TO_CONTENT:
            self._state = M.CONTENT
            self._starts = self._m.starts[2] or None  # the answer starts: its triggers apply
        elif action in (M.BLOCK, M.BLOCK_AT):
            self._in_block = action == M.BLOCK  # a kept trigger (llama's "{") has no closer to wait for
            if self._m.fmt.call_open:
                self._state = M.SECTION
            else:
                self._start_reader(action, marker)
            return start if action == M.BLOCK_AT else end
        elif action in (M.CALL, M.BLOCK_CALL, M.HEADER):
            self._in_block = state == M.SECTION or action == M.BLOCK_CALL
            self._start_reader(action, marker)
        elif action == M.END_CALL:
            self._state = M.SECTION if self._in_block else M.CONTENT
        elif action == M.END_BLOCK:
            self._in_block = False
            self._state = M.CONTENT
        return end

    def _start_reader(self, action: str, marker: str) -> None:
        self._reader = self._new_reader(self._sink, action, marker)
        self._calls_before = self._sink.num_calls
        self._state = M.READER

    def _after_reader(self, outcome: str) -> None:
        reader = self._reader
        self._reader = None
        if outcome == CALL_END:
            self._state = M.SECTION if self._in_block else M.CONTENT
        elif outcome in (BLOCK_END, NOT_A_CALL):
            self._in_block = False
            self._state = M.CONTENT
        elif outcome == M.TO_REASONING:
            self._state = M.REASONING
        elif outcome == M.TO_CONTENT:
            self._state = M.CONTENT
        elif outcome == "reader":
            self._reader = reader.next_reader
            self._state = M.READER
        else:  # the body ended: skip framing up to the closer, if the format has one
            fmt = self._m.fmt
            has_closer = bool((fmt.call_open and fmt.call_close) or (self._in_block and fmt.block_close))
            bare_miss = not self._in_block and self._sink.num_calls == self._calls_before
            self._state = M.SKIP if has_closer and not fmt.harmony and not bare_miss else M.CONTENT


def with_markers(text: str, token_ids: Sequence[int], marker_ids: Mapping[int, str]) -> str:
    """The delta's text with the markers its token ids name but its text lacks.

    A marker token that comes before every other token of the delta goes before the text,
    any other after it (the text of one token is not known here: a marker between two text
    tokens of one delta lands after both).
    """
    found = [(i, marker_ids[t]) for i, t in enumerate(token_ids) if t in marker_ids]
    if not found:
        return text
    before: list[str] = []
    after: list[str] = []
    for rank, (i, marker) in enumerate(found):
        if marker in text:  # rendered by the detokenizer: the text already has it
            continue
        (before if i == rank else after).append(marker)
    if not before and not after:
        return text
    return "".join(before) + text + "".join(after)
