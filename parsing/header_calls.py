"""HeaderReader: calls written as a name header followed by a JSON arguments object."""
from __future__ import annotations

from parsing.json_calls import BLOCK_END, BODY_END, CALL_END, JsonPlan
from parsing.json_stream import DONE, ERROR, JsonScanner
from parsing.sink import Sink

_MAX_HEADER = 512


class HeaderReader:
    """Reads NAME-header-then-JSON calls (mistral, deepseek, kimi, gpt-oss after its header).

    Created by the stream at a call opener; the name is emitted when the arguments' `{`
    (or the call's closer) shows the header is complete.
    """

    __slots__ = ("sink", "plan", "outcome", "head", "name", "scan", "state")

    def __init__(self, sink: Sink, plan: JsonPlan, name: str | None = None) -> None:
        self.sink, self.plan = sink, plan
        self.outcome: str | None = None
        self.head: list[str] = []
        self.name = name
        self.scan: JsonScanner | None = None
        self.state = "head"

    def finish(self) -> None:
        if self.scan is not None:
            self.sink.args(self.scan.completion())
        self.outcome = BODY_END

    def step(self, buf: str, pos: int, final: bool) -> int:
        if self.scan is not None:
            return self._args(buf, pos)
        brace = buf.find("{", pos)
        hit = self.plan.closers.search(buf, pos)
        if hit is not None and (brace < 0 or hit[0] < brace):
            self.head.append(buf[pos:hit[0]])
            if self._start():
                self.sink.args("{}")
            self.outcome = CALL_END if hit[1] == self.plan.call_close else BLOCK_END
            return hit[0] + len(hit[1])
        if brace >= 0:
            self.head.append(buf[pos:brace])
            if not self._start():
                self.outcome = BODY_END
                return brace
            self.scan = JsonScanner()
            self.state = "args"
            return self._args(buf, brace)
        end = len(buf) if final else self.plan.closers.hold_start(buf, pos)
        self.head.append(buf[pos:end])
        if sum(map(len, self.head)) > _MAX_HEADER:
            self.outcome = BODY_END
        return end

    def _start(self) -> bool:
        if self.name is not None:
            self.sink.start_call(self.name)
            return True
        head = "".join(self.head)
        for pattern in self.plan.patterns:
            m = pattern.fullmatch(head)
            if m is None:
                continue
            name = (m.group("name") or "").strip()
            call_id = m.groupdict().get("id")
            if name and not any(c in name for c in " \n<>{}"):
                self.sink.start_call(name, call_id.strip() if call_id else None)
                return True
        return False

    def _args(self, buf: str, pos: int) -> int:
        scan = self.scan
        pos, out = scan.scan(buf, pos)
        if out:
            self.sink.args(out)
        if scan.mode >= DONE:
            if scan.mode == ERROR:
                self.sink.args(scan.completion())
            self.outcome = BODY_END
        return pos
