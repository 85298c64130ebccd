"""Fuzz: random mixes of a format's markers and JSON/XML fragments never raise, give the same
result under any chunking, and always yield valid JSON-object arguments."""
from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import parsing
from parsing.compiled import COMPILED
from tests.parsing.cases import TOOLS
from tests.parsing.harness import check_events, key, random_chunks

FRAGMENTS = ['{"name": "get_weather", "arguments": {', '"city": "', '"days": 1', "}", "{", "]", "[",
             '"', "\\", ",", ":", "\n", " ", "x", "<", "</", ">", "get_weather", "get_time", "12",
             "true", "<parameter=city>", "<parameter=days>", "</parameter>", "<function=get_time>",
             '<parameter name="days">', '" string="false">', "<arg_key>days</arg_key>", "<arg_value>",
             "</arg_value>", "functions.get_time:0", "```json\n", "\n```", "{}", "null", "é東"]


def _markers(fmt: str) -> list[str]:
    c = COMPILED[fmt]
    found = {m for lex in c.machine.lexicons for m in lex.markers}
    found |= {t for starts in c.machine.starts for t, _ in starts}
    plan = c.plan
    for attr in ("params", "param_stop", "value", "closers"):
        lex = getattr(plan, attr, None)
        if lex is not None:
            found |= set(lex.markers)
    return sorted(found | {"<|message|>"} if fmt == "gpt_oss" else found)


@pytest.mark.parametrize("fmt", parsing.formats())
def test_fuzz(fmt: str) -> None:
    pieces = _markers(fmt) + FRAGMENTS

    @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
    @given(idx=st.lists(st.integers(0, len(pieces) - 1), max_size=40), seed=st.integers(0, 2**16),
           sir=st.booleans())
    def check(idx, seed, sir) -> None:
        text = "".join(pieces[i] for i in idx)
        whole = parsing.parse(text, fmt, TOOLS, sir)
        rng = random.Random(seed)
        for max_len in (1, 5):
            s = parsing.open_stream(fmt, TOOLS, sir)
            events = []
            for chunk in random_chunks(text, rng, max_len):
                events += s.feed(chunk)
            events += s.close()
            check_events(events)
            native = fmt == "kimi_k2"
            assert key(parsing.collect(events), native) == key(whole, native)

    check()


@pytest.mark.parametrize("text", ["<tool_call>get<arg_key>days</arg_key>", "<tool_call>get<arg_key>days</arg_key>\n"])
def test_glm47_output_cut_after_a_key_closes_its_string(text: str) -> None:
    """Found by the fuzz: the value's string opens with the key, before <arg_value> is seen."""
    (call,) = parsing.parse(text, "glm47", TOOLS, False).tool_calls
    assert json.loads(call.arguments) == {"days": ""}
