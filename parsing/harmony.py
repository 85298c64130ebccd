"""gpt-oss (harmony) message headers: pick reasoning, content or a tool call per message."""
from __future__ import annotations

import re

from parsing import machine as M
from parsing.header_calls import HeaderReader
from parsing.json_calls import JsonPlan
from parsing.lexicon import Lexicon
from parsing.sink import Sink

MESSAGE = "<|message|>"
_MESSAGE = Lexicon([MESSAGE])
_CHANNEL = re.compile(r"<\|channel\|>\s*([A-Za-z_]+)")
_RECIPIENT = re.compile(r"\bto=([^\s<]+)")
_MAX_HEADER = 512


class HarmonyHeaderReader:
    """Reads `<|start|>assistant to=... <|channel|>X ...<|message|>` and decides what the
    message body is: analysis is reasoning, final and recipient-less commentary (a preamble)
    are content, a `functions.NAME` recipient makes the body a call's JSON arguments."""

    __slots__ = ("sink", "plan", "outcome", "parts", "next_reader", "state")

    def __init__(self, sink: Sink, plan: JsonPlan, marker: str) -> None:
        self.sink, self.plan = sink, plan
        self.outcome: str | None = None
        self.parts = [marker]
        self.next_reader: HeaderReader | None = None
        self.state = "header"

    def finish(self) -> None:
        self.outcome = M.TO_CONTENT

    def fast(self, text: str) -> bool:
        return False

    def step(self, buf: str, pos: int, final: bool) -> int:
        hit = _MESSAGE.search(buf, pos)
        if hit is None:
            end = len(buf) if final else _MESSAGE.hold_start(buf, pos)
            self.parts.append(buf[pos:end])
            if sum(map(len, self.parts)) > _MAX_HEADER:
                self.outcome = M.TO_CONTENT
            return end
        self.parts.append(buf[pos:hit[0]])
        self._classify("".join(self.parts))
        return hit[0] + len(MESSAGE)

    def _classify(self, header: str) -> None:
        channel = _CHANNEL.search(header)
        recipient = _RECIPIENT.search(header)
        target = recipient.group(1) if recipient else ""
        if target.startswith("functions.") and len(target) > len("functions."):
            self.next_reader = HeaderReader(self.sink, self.plan, target[len("functions."):])
            self.outcome = "reader"
            return
        # each message is its own paragraph: a preamble and the final answer are both
        # content, joined by a newline (as vLLM joins them), and so are analysis messages
        kind = M.REASONING if (channel and channel.group(1) == "analysis") or target else M.CONTENT
        self.sink.separate(kind)
        self.outcome = M.TO_REASONING if kind == M.REASONING else M.TO_CONTENT
