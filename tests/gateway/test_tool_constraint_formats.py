"""Constrained tool calls in every parsing format: what the grammar lets the model write is
what the format's parser reads back as the same call."""

from __future__ import annotations

import json
import random

import msgspec
import pytest

import grammar
import parsing
from gateway.tool_constraint import tool_call_spec
from schemas.openai import ChatCompletionRequest
from tests.grammar.conftest import byte_vocab
from tests.grammar.helpers import accepts_text

VOCAB = byte_vocab()
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
          "required": ["city", "days"]}  # fmt: skip
TOOLS = [{"type": "function", "function": {"name": "weather", "parameters": SCHEMA}},
         {"type": "function", "function": {"name": "time", "parameters": {"type": "object", "properties": {}}}}]
FORMATS = [f for f in parsing.formats() if parsing.call_syntax(f)]
CALLS = [("weather", {"city": "New York <b>", "days": 3}), ("time", {})]


def _request(**fields) -> ChatCompletionRequest:
    body = {"messages": [{"role": "user", "content": "hi"}], "tools": TOOLS, **fields}
    return msgspec.convert(body, ChatCompletionRequest)


def _render(fmt: str, calls: list[tuple[str, dict]]) -> str:
    """Calls written the way the constraint allows: compact JSON, or raw-string XML parameters."""
    syn = parsing.call_syntax(fmt)
    parts = []
    for name, args in calls:
        if syn["args"] == "json":
            body = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
        else:
            body = "".join(
                syn["param_begin"].replace("{key}", k).replace("{string}", "true" if isinstance(v, str) else "false")
                + (v if isinstance(v, str) else json.dumps(v)) + syn["param_end"]
                for k, v in args.items()
            )
        begin = syn["begin"].replace("{name}", name).replace("{index}", str(len(parts)))
        parts.append(syn.get("block_begin", "") + begin + body + syn["end"]
                     + syn.get("block_end", ""))  # fmt: skip
    return syn["separator"].join(parts)


@pytest.mark.parametrize("fmt", FORMATS)
def test_required_calls_round_trip_through_the_parser(fmt):
    spec = json.loads(tool_call_spec(_request(tool_choice="required"), fmt).spec.structural_tag)
    g = grammar.compile_structural_tag(spec, VOCAB)
    one_block = parsing.call_syntax(fmt).get("block_begin") and not parsing.call_syntax(fmt).get("block_per_call")
    calls = CALLS[:1] if one_block else CALLS
    text = _render(fmt, calls)
    assert accepts_text(g, text), text
    parsed = parsing.parse(text, fmt, [msgspec.to_builtins(t) for t in TOOLS])
    assert [(c.name, json.loads(c.arguments)) for c in parsed.tool_calls] == calls
    assert not accepts_text(g, _render(fmt, [("weather", {"city": "Paris", "days": "three"})]))
    assert not accepts_text(g, "Sure! " + text)
    if one_block:
        assert not accepts_text(g, _render(fmt, CALLS))


@pytest.mark.parametrize("fmt", FORMATS)
def test_strict_calls_in_free_text_round_trip(fmt):
    tools = [{**t, "function": {**t["function"], "strict": True}} for t in TOOLS]
    spec = json.loads(tool_call_spec(_request(tools=tools, parallel_tool_calls=False), fmt).spec.structural_tag)
    g = grammar.compile_structural_tag(spec, VOCAB)
    text = _render(fmt, CALLS[:1])
    assert accepts_text(g, "Let me look. " + text)
    assert not accepts_text(g, "Let me look. " + _render(fmt, [("weather", {"city": "Paris", "days": "three"})]))


@pytest.mark.parametrize("fmt", [f for f in FORMATS if parsing.call_syntax(f)["args"] == "xml"])
def test_raw_string_values_with_markup_round_trip(fmt):
    """Raw values holding pieces of the closing string, newlines and quotes read back verbatim."""
    rng = random.Random(fmt)
    end = parsing.call_syntax(fmt)["param_end"]
    pieces = ["<", "</", end[: len(end) // 2], end[1:], "\"", "\\", "é", "{}", "x", " ", "\n"]
    spec = json.loads(tool_call_spec(_request(tool_choice="required"), fmt).spec.structural_tag)
    g = grammar.compile_structural_tag(spec, VOCAB)
    for _ in range(20):
        # the parsers trim newlines at a value's ends (the formats put the value on its own lines)
        city = "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 8))).strip("\n")
        if end.strip() in city:  # the first closing string ends the value, in grammar and parser alike
            continue
        calls = [("weather", {"city": city, "days": rng.randrange(-5, 100)})]
        text = _render(fmt, calls)
        assert accepts_text(g, text), text
        parsed = parsing.parse(text, fmt, [msgspec.to_builtins(t) for t in TOOLS])
        assert [(c.name, json.loads(c.arguments)) for c in parsed.tool_calls] == calls, text
