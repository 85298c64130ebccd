"""Flexible whitespace (issue 39): one bounded gap between tokens, never two gaps back to back.

`{ ws body ws }` with an empty body put two free whitespace runs one after the other, which the
DFA tracks as a state per pair of counts (a chain of 49 states where one gap takes 25), each row
built cold by a mask fill. The whitespace after `{` / `[` now leads the first member.
"""

from __future__ import annotations

import numpy as np
import pytest

import grammar
from grammar.frontends.json_text import MAX_FLEXIBLE_WS
from tests.grammar.helpers import accepts_text

SCHEMAS = [
    {"type": "array", "items": {"type": "integer"}},
    {"type": "array", "prefixItems": [{"type": "integer"}], "minItems": 0},
    {"type": "array", "items": {"type": "integer"}, "maxItems": 3},
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
    {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False},
    {"type": "object", "additionalProperties": {"type": "integer"}, "maxProperties": 2},
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
     "dependentRequired": {"a": ["b"]}},
    {},  # any value: the @any rule's objects and arrays
]


def _full_dfa_size(g: grammar.CompiledGrammar) -> int:
    dfa = g.dfa
    todo = list(dfa.rule_start)
    seen = set(todo)
    while todo:
        d = todo.pop()
        dfa.compute_row(d)
        nxt = [int(t) for t in np.unique(dfa.trans[d]) if t >= 0] + [r for _, r in dfa.calls(d)]
        for t in nxt:
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return len(seen)


@pytest.mark.parametrize("schema", SCHEMAS, ids=range(len(SCHEMAS)))
def test_one_gap_in_empty_containers(bytes_vocab, schema):
    g = grammar.compile_json_schema(schema, bytes_vocab, whitespace="flexible")
    empty = "[{}]" if schema == {} else ("[]" if schema["type"] == "array" else "{}")
    gap = " " * MAX_FLEXIBLE_WS
    inner = empty[:-1] + gap + empty[-1:]
    assert accepts_text(g, inner)
    assert accepts_text(g, empty[:-1] + "\n" + empty[-1:])
    assert not accepts_text(g, empty[:-1] + gap + " " + empty[-1:])  # one gap, bounded (two before: up to 48)
    full = '{"a": 1, "b": 2}' if "properties" in schema or schema.get("additionalProperties") else "[1, 2]"
    if "additionalProperties" in schema and "properties" not in schema:
        full = '{"x": 1,\n "y" : 2}'
    elif "properties" in schema and schema.get("additionalProperties") is False:
        full = '{"a" :\n1}'
    assert accepts_text(g, full.replace("{", "{" + gap, 1).replace("[", "[" + gap, 1))
    assert accepts_text(g, full.replace("}", gap + "}").replace("]", gap + "]"))


def test_flexible_array_dfa_is_one_chain_per_gap(bytes_vocab):
    """`[ ws item (ws , ws item)* ws ]` of integers: three gaps of MAX_FLEXIBLE_WS + 1 states and a
    few for the number and brackets (106 with the empty array's double gap)."""
    g = grammar.compile_json_schema({"type": "array", "items": {"type": "integer"}}, bytes_vocab, whitespace="flexible")
    assert _full_dfa_size(g) <= 3 * (MAX_FLEXIBLE_WS + 1) + 10
    compact = grammar.compile_json_schema({"type": "array", "items": {"type": "integer"}}, bytes_vocab)
    assert accepts_text(compact, "[]") and not accepts_text(compact, "[ ]")
