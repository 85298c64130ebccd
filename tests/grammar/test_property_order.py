"""The property-order policy (issue 39): declared order, or any order with each member at most once."""

from __future__ import annotations

import itertools
import json

import pytest

import grammar
from tests.grammar.conftest import byte_vocab
from tests.grammar.helpers import accepts_text

VOCAB = byte_vocab()
OBJ = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}},
       "required": ["a", "b"]}  # fmt: skip


@pytest.mark.parametrize("order, text, accepted", [
    ("declared", '{"a":1,"b":"x"}', True),
    ("declared", '{"b":"x","a":1}', False),  # required a, b: neither declared nor required-first order
    ("declared", '{"a":1,"b":"x","a":2}', False),
    ("any", '{"b":"x","a":1}', True),
    ("any", '{"c":true,"b":"x","a":1}', True),
    ("any", '{"b":"x","c":true,"a":1}', True),
    ("any", '{"b":"x"}', False),  # a required one missing
    ("any", '{"a":1,"b":"x","a":2}', False),  # twice
    ("any", '{"a":1,"c":true}', False),
    ("any", '{"a":1,"b":"x","d":1}', True),  # open object: extra members anywhere
    ("any", '{"d":1,"b":"x","a":1}', True),
    ("any", '{"d":1,"a":"x","b":"x"}', False),  # a declared name keeps its schema
])  # fmt: skip
def test_order_policy(order: str, text: str, accepted: bool) -> None:
    g = grammar.compile_json_schema(OBJ, VOCAB, property_order=order)
    assert accepts_text(g, text) is accepted


def test_any_order_takes_every_permutation_once_each_in_strict_mode() -> None:
    schema = {"type": "object", "properties": {k: {"type": "integer"} for k in "abcd"}, "required": ["a", "c"]}
    g = grammar.compile_json_schema(schema, VOCAB, strict=True, property_order="any")
    for n in range(5):
        for keys in itertools.permutations("abcd", n):
            text = json.dumps({k: 1 for k in keys}, separators=(",", ":"))
            assert accepts_text(g, text) is ("a" in keys and "c" in keys), text
    assert not accepts_text(g, '{"a":1,"c":1,"e":1}')


def test_any_order_in_flexible_whitespace_and_nested() -> None:
    schema = {"type": "object", "properties": {"x": OBJ, "y": {"type": "null"}}, "required": ["x", "y"]}
    g = grammar.compile_json_schema(schema, VOCAB, whitespace="flexible", property_order="any")
    assert accepts_text(g, '{ "y": null,\n  "x": {"b": "q", "a": 2} }')
    assert not accepts_text(g, '{"y":null}')


def test_large_objects_keep_declared_order() -> None:
    """Past the budget (2**n sets) declared order holds: a subset of the valid documents, never more."""
    props = {f"p{i}": {"type": "integer"} for i in range(16)}
    g = grammar.compile_json_schema({"type": "object", "properties": props}, VOCAB, property_order="any")
    assert accepts_text(g, '{"p0":1,"p1":2}')
    assert not accepts_text(g, '{"p1":2,"p0":1}')


def test_unknown_policy_raises() -> None:
    with pytest.raises(grammar.GrammarError, match="property order"):
        grammar.compile_json_schema(OBJ, VOCAB, property_order="sorted")
