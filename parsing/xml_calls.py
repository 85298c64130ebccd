"""XmlCallReader: calls whose arguments are XML-like parameters, typed into a JSON object."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from parsing.json_calls import BLOCK_END, BODY_END, CALL_END
from parsing.json_stream import DONE, ERROR, JsonScanner
from parsing.lexicon import Lexicon
from parsing.sink import Sink
from parsing.spec import Xml
from parsing.xml_values import ANY_JSON, STRING, ValueKind, convert, escape, kind_of

_WS = " \t\r\n"
_MAX_HEADER = 256
_BAD_NAME = frozenset(' \t\n<>{}"=')


@dataclass(frozen=True, slots=True)
class XmlPlan:
    """Compiled data for one XML format."""
    xml: Xml
    name_re: re.Pattern[str]
    name_stop: re.Pattern[str]
    param_re: re.Pattern[str]
    params: Lexicon  # inside a call: parameter opener, call closer, block closer
    param_stop: Lexicon
    value: Lexicon  # inside a value: its closer, or a parameter opener / call closer when the
    #                 model skipped the value's closer
    confirm: tuple[str, ...]  # what may follow a value closer that is structural
    confirm_call: tuple[str, ...]  # what may follow a call closer met inside a value
    call_close: tuple[str, ...]


def xml_plan(xml: Xml, call_close: tuple[str, ...], block_close: tuple[str, ...],
             call_open: tuple[str, ...] = ()) -> XmlPlan:
    confirm = xml.param_open + call_close + block_close
    return XmlPlan(
        xml=xml,
        name_re=re.compile(xml.name_pattern, re.S),
        name_stop=re.compile("[" + re.escape(xml.name_stop) + "]"),
        param_re=re.compile(xml.param_pattern, re.S),
        params=Lexicon(confirm),
        param_stop=Lexicon([xml.param_stop]),
        value=Lexicon(xml.value_close + xml.param_open + call_close),
        confirm=confirm,
        confirm_call=block_close + call_open,
        call_close=call_close,
    )


class XmlCallReader:
    """Reads one call: its name header, then parameters until the call (or block) closes.

    String values stream as they arrive inside a JSON string; typed values are sent once
    their closing tag is known to be structural (followed by the next parameter or a closer).
    """

    __slots__ = ("sink", "plan", "props", "tools", "outcome", "state", "parts", "kind",
                 "num_params", "first", "nl", "key", "seen", "dup", "num_chars", "scan", "closed")

    def __init__(self, sink: Sink, plan: XmlPlan, tools: dict[str, dict]) -> None:
        self.sink, self.plan, self.tools = sink, plan, tools
        self.props: dict = {}
        self.outcome: str | None = None
        self.state = "head"
        self.parts: list[str] = []
        self.num_chars = 0  # length of a header collected in parts
        self.kind: ValueKind = STRING
        self.num_params = 0
        self.first = self.nl = False
        self.key = ""
        self.seen: set[str] = set()  # parameter names already written
        self.dup = False  # the current parameter repeats a name: its value is dropped
        self.scan: JsonScanner | None = None  # a JSON object written as the whole call body
        self.closed = False  # the arguments object was closed by that body

    def step(self, buf: str, pos: int, final: bool) -> int:
        return _XML_STEPS[self.state](self, buf, pos, final)

    def fast(self, text: str) -> bool:
        """A piece of a string value with no tag in it and no framing newline to trim."""
        if self.state != "value" or not self.kind.streamable or self.dup or self.plan.value.starts_search(text):
            return False
        if self.plan.xml.strip_newline and (self.first or self.nl or text[-1] == "\n"):
            return False
        self.sink.args(escape(text))
        self.first = False
        return True

    def finish(self) -> None:
        """End of output: close an open string value and the arguments object."""
        if self.state in ("vopen", "value") and self.kind.streamable and not self.dup:
            self.sink.args('"')  # the string was opened when the key was read, before the value opener
        if self.state == "json":
            self.sink.args(self.scan.completion())
        elif self.state != "head" and not self.closed:
            self.sink.args("}")
        self.outcome = BODY_END

    def _head(self, buf: str, pos: int, final: bool) -> int:
        m = self.plan.name_stop.search(buf, pos)
        end = m.start() if m else len(buf)
        if self._collect(buf[pos:end]) and m is None:
            self.outcome = BODY_END
        if m is None or self.outcome is not None:
            return end
        found = self.plan.name_re.fullmatch("".join(self.parts))
        name = found.group("name").strip() if found else ""
        if not name or _BAD_NAME.intersection(name):
            self.outcome = BODY_END  # not a call (an unrendered template, say): drop its header
            return m.end()
        self.sink.start_call(name)
        self.sink.args("{")
        props = self.tools.get(name)
        self.props = props if isinstance(props, dict) else {}
        self.state = "params"
        return m.end() if m.group() in self.plan.xml.name_eat else end

    def _params(self, buf: str, pos: int, final: bool) -> int:
        if self.plan.xml.json_body and not self.seen and self.scan is None:
            q = pos
            while q < len(buf) and buf[q] in _WS:
                q += 1
            if q < len(buf) and buf[q] == "{":  # the body is one JSON object, not parameters
                self.scan, self.state = JsonScanner(), "json"
                self.scan.scan("{", 0)  # its "{" was sent with the name
                return q + 1
            pos = q
        hit = self.plan.params.search(buf, pos)
        if hit is None:
            return len(buf) if final else self.plan.params.hold_start(buf, pos)
        start, marker = hit
        if marker in self.plan.xml.param_open:
            if not self.closed:
                self.state, self.parts, self.num_chars = "phead", [], 0
        else:
            if not self.closed:
                self.sink.args("}")
            self.outcome = CALL_END if marker in self.plan.call_close else BLOCK_END
        return start + len(marker)

    def _json(self, buf: str, pos: int, final: bool) -> int:
        scan = self.scan
        pos, out = scan.scan(buf, pos)
        self.sink.args(out)
        if scan.mode >= DONE:
            if scan.mode == ERROR:
                self.sink.args(scan.completion())
            self.closed, self.state = True, "params"
        return pos

    def _phead(self, buf: str, pos: int, final: bool) -> int:
        lex = self.plan.param_stop
        hit = lex.search(buf, pos)
        end = hit[0] if hit else (len(buf) if final else lex.hold_start(buf, pos))
        too_long = self._collect(buf[pos:end])
        found = None
        if hit is not None:
            found = self.plan.param_re.fullmatch("".join(self.parts))
        if found is None:
            if hit is not None or too_long:
                self.sink.args("}")
                self.outcome = BODY_END
            return end
        self._begin_value(found)
        return hit[0] + len(hit[1])

    def _collect(self, text: str) -> bool:
        """Add header text; True once the header is too long to be one."""
        self.parts.append(text)
        self.num_chars += len(text)
        return self.num_chars > _MAX_HEADER

    def _begin_value(self, found: re.Match[str]) -> None:
        self.key = found.group("key").strip()
        self.dup = self.key in self.seen
        self.seen.add(self.key)
        flag = found.groupdict().get("string")
        if flag is not None:
            self.kind = STRING if flag == "true" else ANY_JSON
        else:
            self.kind = kind_of(self.props.get(self.key))
        if self.kind.streamable and not self.dup:
            self.sink.args(self._prefix() + '"')
        self.state, self.parts = ("vopen" if self.plan.xml.value_open else "value"), []
        self.first, self.nl = True, False

    def _vopen(self, buf: str, pos: int, final: bool) -> int:
        opener, n = self.plan.xml.value_open, len(buf)
        q = pos
        while q < n and buf[q] in _WS:
            q += 1
        if buf.startswith(opener, q):
            self.state = "value"
            return q + len(opener)
        if not final and (q == n or (n - q < len(opener) and opener.startswith(buf[q:]))):
            return q
        self.state = "value"  # the model left the opener out: the value starts here
        return q

    def _prefix(self) -> str:
        sep = ", " if self.num_params else ""
        self.num_params += 1
        return sep + json.dumps(self.key, ensure_ascii=False) + ": "

    def _value(self, buf: str, pos: int, final: bool) -> int:
        lex = self.plan.value
        first = lex.first_start(buf, pos)
        hit = None if first < 0 else lex.search(buf, first)
        if hit is None:
            end = len(buf) if final or first < 0 else lex.hold_start(buf, first)
            self._text(buf[pos:end])
            return end
        start, marker = hit
        self._text(buf[pos:start])
        after = start + len(marker)
        if marker in self.plan.xml.param_open:  # the model skipped the value's closer
            self._end_value()
            self.state = "phead"
            return after
        closes_value = marker in self.plan.xml.value_close
        confirm = self.plan.confirm if closes_value else self.plan.confirm_call
        q, n = after, len(buf)
        while q < n and buf[q] in _WS:
            q += 1
        if any(buf.startswith(c, q) for c in confirm) or (final and q == n):
            self._end_value()
            if not closes_value:
                self.sink.args("}")
                self.outcome = CALL_END
            return after
        if not final and (q == n or any(c.startswith(buf[q:]) for c in confirm if n - q < len(c))):
            return start
        self._text(marker)  # a closing tag inside the value: it is data
        return after

    def _text(self, text: str) -> None:
        if not text or self.dup:
            return
        if self.plan.xml.strip_newline:
            if self.first and text[0] == "\n":
                text = text[1:]
            self.first = False
            if self.nl:
                text = "\n" + text
                self.nl = False
            if text.endswith("\n"):
                text, self.nl = text[:-1], True
        else:
            self.first = False
        if self.kind.streamable:
            if text:
                self.sink.args(escape(text))
        else:
            self.parts.append(text)

    def _end_value(self) -> None:
        if self.dup:
            pass
        elif self.kind.streamable:
            self.sink.args('"')
        else:
            self.sink.args(self._prefix() + convert("".join(self.parts), self.kind))
        self.state, self.parts = "params", []


_XML_STEPS = {name: getattr(XmlCallReader, "_" + name) for name in ("head", "params", "phead", "vopen", "value", "json")}
