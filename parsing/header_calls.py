"""HeaderReader: calls written as a name header followed by their arguments (JSON or literals)."""
from __future__ import annotations

import json

from parsing.json_calls import BLOCK_END, BODY_END, CALL_END, NOT_A_CALL, JsonPlan
from parsing.json_stream import DONE, ERROR, JsonScanner
from parsing.literal_args import LiteralArgsScanner
from parsing.literals import DIALECTS
from parsing.sink import CONTENT, Sink

_MAX_HEADER = 512
_WS = " \t\r\n"


class HeaderReader:
    """Reads NAME-header-then-arguments calls: mistral, deepseek, kimi and gpt-oss (a JSON
    object), pythonic calls (`name(k=v)`) and Gemma's (`call:name{k:v}`), one or several per body.

    Created by the stream at a call opener; the name is emitted when the arguments' opener
    (or the call's closer) shows the header is complete. A body whose header cannot be a
    name (the format limits its characters) before any call started is content after all.
    `keys` maps tool names to (parameter names, required names), for guessing the name of a
    call that carries only an id.
    """

    __slots__ = ("sink", "plan", "outcome", "head", "name", "scan", "state", "raw", "at", "keys",
                 "guess_id", "held")

    def __init__(self, sink: Sink, plan: JsonPlan, name: str | None = None,
                 keys: dict[str, tuple[frozenset, frozenset]] | None = None) -> None:
        self.sink, self.plan = sink, plan
        self.outcome: str | None = None
        self.head: list[str] = []
        self.name = name
        self.scan: JsonScanner | LiteralArgsScanner | None = None
        header = plan.header
        self.state = "open" if header is not None and header.list_open else "head"
        # text read while no call has started, given back as content if it is not a call
        self.raw: list[str] | None = [] if plan.head_bad is not None else None
        self.at = 0
        self.keys = keys or {}
        self.guess_id: str | None = None  # the id of a call whose name is guessed at its end
        self.held: list[str] = []  # that call's arguments, held until the name is known

    def finish(self) -> None:
        if self.scan is not None:
            self._emit(self.scan.completion())
            self._end_args()
        elif self.raw is not None:
            self.sink.text(CONTENT, "".join(self.raw))
        self.outcome = BODY_END

    def fast(self, text: str) -> bool:
        if self.state == "args" and self.guess_id is None and self.scan is not None:
            out = self.scan.plain(text)
            if out is not None:
                self.sink.args(out)
                return True
        return False

    def step(self, buf: str, pos: int, final: bool) -> int:
        self.at = pos
        new = _HEADER_STEPS[self.state](self, buf, pos, final)
        if self.raw is not None and self.outcome is None:
            self.raw.append(buf[pos:new])
        return new

    def _open(self, buf: str, pos: int, final: bool) -> int:
        q = pos
        while q < len(buf) and buf[q] in _WS:
            q += 1
        if q == len(buf):
            if final:
                self.outcome = BODY_END
            return q
        opener = self.plan.header.list_open
        if buf.startswith(opener, q):
            self.state = "head"
            return q + len(opener)
        if not final and opener.startswith(buf[q:]):
            return q
        self.state = "head"
        return q

    def _head(self, buf: str, pos: int, final: bool) -> int:
        plan = self.plan
        dialect = DIALECTS.get(plan.header.args) if plan.header is not None else None
        brace = buf.find(dialect.open if dialect else "{", pos)
        hit = plan.closers.search(buf, pos)
        if plan.head_bad is not None:
            limit = min(brace if brace >= 0 else len(buf), hit[0] if hit else len(buf))
            bad = plan.head_bad.search(buf, pos, limit)
            if bad is not None:
                if not final and hit is None and bad.start() >= plan.closers.hold_start(buf, pos):
                    self.head.append(buf[pos:bad.start()])
                    return bad.start()  # maybe the start of a closer: wait
                return self._not_a_call(buf, bad.start())
        if hit is not None and (brace < 0 or hit[0] < brace):
            self.head.append(buf[pos:hit[0]])
            if self._start():
                self._emit("{}")
                self._end_args()
            self.outcome = CALL_END if hit[1] in plan.call_close else BLOCK_END
            return hit[0] + len(hit[1])
        if brace >= 0:
            self.head.append(buf[pos:brace])
            if not self._start():
                return self._not_a_call(buf, brace)
            self.scan = LiteralArgsScanner(dialect) if dialect else JsonScanner()
            self.state = "args"
            return self._args(buf, brace, final)
        end = len(buf) if final else plan.closers.hold_start(buf, pos)
        self.head.append(buf[pos:end])
        if sum(map(len, self.head)) > _MAX_HEADER:
            return self._not_a_call(buf, end)
        return end

    def _not_a_call(self, buf: str, end: int) -> int:
        """The header cannot be a call's: content when no call started, else the body ends."""
        if self.raw is not None:
            self.sink.text(CONTENT, "".join(self.raw) + buf[self.at:end])
            self.raw = None
            self.outcome = NOT_A_CALL
        else:
            self.outcome = BODY_END
        return end

    def _start(self) -> bool:
        if self.name is not None:
            self.sink.start_call(self.name)
            return self._started()
        head = "".join(self.head)
        self.head = []
        for pattern in self.plan.patterns:
            m = pattern.fullmatch(head)
            if m is None:
                continue
            groups = m.groupdict()
            call_id = (groups.get("id") or "").strip() or None
            if "name" not in groups:
                if call_id and self.keys:
                    self.guess_id = call_id
                    return self._started()
                continue
            name = (groups["name"] or "").strip()
            if name and not any(c in name for c in " \n<>{}"):
                self.sink.start_call(name, call_id)
                return self._started()
        return False

    def _started(self) -> bool:
        self.raw = None
        return True

    def _emit(self, text: str) -> None:
        if self.guess_id is not None:
            self.held.append(text)
        else:
            self.sink.args(text)

    def _args(self, buf: str, pos: int, final: bool) -> int:
        scan = self.scan
        pos, out = scan.scan(buf, pos)
        if out:
            self._emit(out)
        if scan.mode >= DONE:
            failed = scan.mode == ERROR
            if failed:
                self._emit(scan.completion())
            self._end_args()
            self.scan = None
            if self.plan.header is not None and self.plan.header.separators and not failed:
                self.state = "between"
            else:
                self.outcome = BODY_END
        return pos

    def _end_args(self) -> None:
        """A call's arguments are complete: a call with a guessed name is sent now."""
        if self.guess_id is None:
            return
        text, call_id = "".join(self.held), self.guess_id
        self.guess_id, self.held = None, []
        name = guess_name(text, self.keys)
        if name is not None:
            self.sink.start_call(name, f"functions.{name}:{call_id}" if call_id.isdigit() else call_id)
            self.sink.args(text)

    def _between(self, buf: str, pos: int, final: bool) -> int:
        header, n = self.plan.header, len(buf)
        skip = _WS + header.separators
        while pos < n and buf[pos] in skip:
            pos += 1
        if pos == n:
            if final:
                self.outcome = BODY_END
            return pos
        if header.list_close and buf.startswith(header.list_close, pos):
            self.outcome = BODY_END
            return pos + len(header.list_close)
        self.state = "head"
        return pos


_HEADER_STEPS = {name: getattr(HeaderReader, "_" + name) for name in ("open", "head", "args", "between")}


def guess_name(arguments: str, keys: dict[str, tuple[frozenset, frozenset]]) -> str | None:
    """The one tool whose parameters take these arguments (its required ones all given), or
    the only tool; None when no tool or several fit."""
    if len(keys) == 1:
        return next(iter(keys))
    try:
        given = json.loads(arguments)
    except ValueError:
        return None
    if not isinstance(given, dict):
        return None
    names = set(given)
    fits = [name for name, (params, required) in keys.items() if names <= params and required <= names]
    return fits[0] if len(fits) == 1 else None
