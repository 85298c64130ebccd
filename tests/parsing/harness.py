"""Test helpers: run a case through any chunking and check the stream's invariants."""
from __future__ import annotations

import json
import random
import re

import parsing
from parsing import ContentDelta, ReasoningDelta, ToolCallArgs, ToolCallStart
from tests.parsing.cases import Case

OPENAI_ID = re.compile(r"call_[A-Za-z0-9]{24}\Z")
MISTRAL_ID = re.compile(r"[A-Za-z0-9]{9}\Z")


def run(case: Case, chunks: list[str]) -> list:
    """All events of one stream fed the given chunks, then closed."""
    s = parsing.open_stream(case.fmt, case.tools, case.starts_in_reasoning)
    events: list = []
    for chunk in chunks:
        events += s.feed(chunk)
    events += s.close()
    return events


def key(parsed: parsing.Parsed, keep_ids: bool) -> tuple:
    """Comparable form of a Parsed; generated ids are random, so they are left out."""
    calls = tuple((c.id if keep_ids else "", c.name, c.arguments) for c in parsed.tool_calls)
    return parsed.reasoning, parsed.content, calls


def check_events(events: list) -> None:
    """Stream invariants: well-ordered calls, no empty text, arguments that are JSON objects."""
    started: list[int] = []
    for ev in events:
        if isinstance(ev, (ContentDelta, ReasoningDelta)):
            assert ev.text, "empty text delta"
        elif isinstance(ev, ToolCallStart):
            assert ev.index == len(started), "call indexes must count up from 0"
            assert ev.name and ev.id
            started.append(ev.index)
        elif isinstance(ev, ToolCallArgs):
            assert ev.index in started, "arguments before their call started"
            assert ev.text
    for call in parsing.collect(events).tool_calls:
        assert isinstance(json.loads(call.arguments), dict), call.arguments


def check_expected(case: Case, parsed: parsing.Parsed) -> None:
    assert parsed.reasoning == case.reasoning
    assert parsed.content == case.content
    got = [(c.name, json.loads(c.arguments)) for c in parsed.tool_calls]
    assert got == [(n, a) for n, a in case.calls]
    for call, want in zip(parsed.tool_calls, case.ids or [None] * len(parsed.tool_calls)):
        if want is not None:
            assert call.id == want
        elif case.fmt in ("mistral", "mistral_legacy"):
            assert MISTRAL_ID.match(call.id), call.id
        elif case.fmt != "kimi_k2":
            assert OPENAI_ID.match(call.id), call.id


def random_chunks(text: str, rng: random.Random, max_len: int) -> list[str]:
    chunks, i = [], 0
    while i < len(text):
        j = i + rng.randint(1, max_len)
        chunks.append(text[i:j])
        i = j
    return chunks
