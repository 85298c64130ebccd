"""JSON-argument call plans, reader outcomes, and EnvelopeReader for {"name", "arguments"} objects."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from parsing.json_stream import DONE, ERROR, JsonScanner
from parsing.lexicon import Lexicon
from parsing.sink import CONTENT, Sink
from parsing.spec import Envelope, Header

_WS = " \t\r\n"

# reader outcomes, read by the stream after each step
CALL_END, BLOCK_END, BODY_END, NOT_A_CALL = "call_end", "block_end", "body_end", "content"


@dataclass(frozen=True, slots=True)
class JsonPlan:
    """Compiled data for JSON-argument readers (and the python-argument ones of Header)."""
    envelope: Envelope | None
    header: Header | None
    patterns: tuple[re.Pattern[str], ...]
    closers: Lexicon  # call and block closers
    call_close: tuple[str, ...]
    head_bad: re.Pattern[str] | None  # a character a name header may not contain
    guess: bool  # some pattern matches an id without a name: names are guessed from tools


def json_plan(body: Envelope | Header, call_close: tuple[str, ...], block_close: tuple[str, ...]) -> JsonPlan:
    closers = Lexicon(call_close + block_close)
    if isinstance(body, Envelope):
        return JsonPlan(body, None, (), closers, call_close, None, False)
    patterns = tuple(re.compile(p, re.S) for p in body.patterns)
    head_bad = re.compile("[^" + body.head_chars + "]") if body.head_chars else None
    guess = any("name" not in p.groupindex for p in patterns)
    return JsonPlan(None, body, patterns, closers, call_close, head_bad, guess)


def _skip_ws(buf: str, pos: int, chars: str = _WS) -> int:
    n = len(buf)
    while pos < n and buf[pos] in chars:
        pos += 1
    return pos


def _args_from_value(text: str) -> str:
    """Arguments given as something other than an object: a JSON-encoded string, or nothing."""
    try:
        value = json.loads(text)
        if isinstance(value, str):
            value = json.loads(value)
    except ValueError:
        return "{}"
    return json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else "{}"


class EnvelopeReader:
    """Reads {"name": N, "arguments": {...}} objects (one, several, or a JSON list of them).

    Created by the stream when a block opens; arguments are forwarded as they arrive once
    the name is known. An object that turns out not to be a call becomes content.
    """

    __slots__ = ("sink", "plan", "outcome", "state", "scan", "cap", "key", "role", "call_id",
                 "args", "args_sent", "started", "raw", "array", "at")

    def __init__(self, sink: Sink, plan: JsonPlan, array: bool = False) -> None:
        self.sink, self.plan = sink, plan
        self.outcome: str | None = None
        self.state = "open"
        self.array = array  # the block opener already opened a list (Phi-4-mini's "functools[")
        self.at = 0
        self._new_object()

    def _new_object(self) -> None:
        self.scan = JsonScanner()
        self.cap: list[str] | None = []  # None while arguments are being forwarded
        self.key = self.role = ""
        self.call_id: str | None = None
        self.args: str | None = None  # arguments captured before the name was known
        self.args_sent = False
        self.started = False
        self.raw: list[str] = []

    def step(self, buf: str, pos: int, final: bool) -> int:
        self.at = pos
        new = _ENVELOPE_STEPS[self.state](self, buf, pos, final)
        if not self.started and self.outcome is None and self.state not in ("open", "between"):
            self.raw.append(buf[self.at:new])  # text of an object that may turn out not a call
        return new

    def fast(self, text: str) -> bool:
        if self.state == "value" and self.cap is None:
            out = self.scan.plain(text)
            if out is not None:
                self.sink.args(out)
                return True
        return False

    def finish(self) -> None:
        """End of output inside the body: close a started call's arguments, drop the rest."""
        if self.started:
            self._close_args()
        self.outcome = BODY_END

    def _close_args(self) -> None:
        if self.cap is None and not self.args_sent:
            self.sink.args(self.scan.completion())
        elif not self.args_sent:
            self.sink.args(self.args or "{}")
        self.args_sent = True

    def _error(self, buf: str, pos: int) -> int:
        if self.started:
            self._close_args()
            self.outcome = BODY_END
            return pos
        self.sink.text(CONTENT, "".join(self.raw) + buf[self.at:pos])
        self.outcome = NOT_A_CALL
        return pos

    def _open(self, buf: str, pos: int, final: bool) -> int:
        seps = _WS if self.state == "open" else _WS + self.plan.envelope.separators
        pos = _skip_ws(buf, pos, seps)
        self.at = pos  # whitespace before an object is never part of it
        if pos >= len(buf):
            if final:
                self.outcome = BODY_END
            return pos
        ch = buf[pos]
        if ch == "{":
            self._new_object()
            self.state = "key"
            return pos + 1
        if ch == "[" and self.state == "open" and not self.array:
            self.array = True
            return pos + 1
        if ch == "]" and self.array:
            self.outcome = BODY_END
            return pos + 1
        if self.state == "open" and not self.array:
            return self._error(buf, pos)
        self.outcome = BODY_END
        return pos

    _between = _open

    def _key(self, buf: str, pos: int, final: bool) -> int:
        pos = _skip_ws(buf, pos)
        if pos >= len(buf):
            return pos
        ch = buf[pos]
        if ch == "}":
            return self._end_object(buf, pos)
        if ch != '"':
            return self._error(buf, pos)
        self.scan, self.cap, self.state = JsonScanner(), [], "key_str"
        return self._key_str(buf, pos, final)

    def _key_str(self, buf: str, pos: int, final: bool) -> int:
        pos, out = self.scan.scan(buf, pos)
        self.cap.append(out)
        if self.scan.failed:
            return self._error(buf, pos)
        if self.scan.done:
            self.key = json.loads("".join(self.cap))
            self.state = "colon"
        return pos

    def _colon(self, buf: str, pos: int, final: bool) -> int:
        pos = _skip_ws(buf, pos)
        if pos >= len(buf):
            return pos
        if buf[pos] != ":":
            return self._error(buf, pos)
        self.state = "value_start"
        return pos + 1

    def _value_start(self, buf: str, pos: int, final: bool) -> int:
        pos = _skip_ws(buf, pos)
        if pos >= len(buf):
            return pos
        env, key = self.plan.envelope, self.key
        if env.keyed:  # {NAME: {arguments}}: the first key names the call
            self.role = "skip"
            if not self.started and isinstance(key, str) and key:
                self.started = True
                self.sink.start_call(key, None)
                self.role = "args"
        else:
            self.role = ("name" if key in env.name_keys else "args" if key in env.args_keys
                         else "id" if key in env.id_keys else "skip")
        self.scan, self.cap = JsonScanner(), []
        if self.role == "args" and buf[pos] == "{" and self.started and not self.args_sent:
            self.cap = None
        self.state = "value"
        return pos

    def _value(self, buf: str, pos: int, final: bool) -> int:
        scan = self.scan
        pos, out = scan.scan(buf, pos)
        if self.cap is None:
            if out:
                self.sink.args(out)
        else:
            self.cap.append(out)
        if scan.mode >= DONE:
            if scan.mode == ERROR:
                return self._error(buf, pos)
            self._end_value()
            self.state = "member_end"
        return pos

    def _end_value(self) -> None:
        role, cap = self.role, self.cap
        self.cap = []
        if cap is None:
            self.args_sent = True
        elif role == "args" and not self.args_sent:
            text = "".join(cap)
            self.args = text if text.startswith("{") else _args_from_value(text)
            if self.started:
                self.sink.args(self.args)
                self.args_sent = True
        elif role in ("name", "id"):
            value = json.loads("".join(cap))
            if not isinstance(value, str) or not value:
                return
            if role == "id":
                self.call_id = value
            elif not self.started:
                self.started = True
                self.sink.start_call(value, self.call_id)
                if self.args is not None:
                    self.sink.args(self.args)
                    self.args_sent = True

    def _member_end(self, buf: str, pos: int, final: bool) -> int:
        pos = _skip_ws(buf, pos)
        if pos >= len(buf):
            return pos
        ch = buf[pos]
        if ch == ",":
            self.state = "key"
            return pos + 1
        if ch == "}":
            return self._end_object(buf, pos)
        return self._error(buf, pos)

    def _end_object(self, buf: str, pos: int) -> int:
        if not self.started:
            return self._error(buf, pos + 1)
        if not self.args_sent:
            self.sink.args(self.args or "{}")
            self.args_sent = True
        self.state = "between"
        return pos + 1


_ENVELOPE_STEPS = {name: getattr(EnvelopeReader, "_" + name) for name in (
    "open", "between", "key", "key_str", "colon", "value_start", "value", "member_end")}
