"""The default property-order policy (issue 39): declared order or the required members first (in
`required`'s order); small objects in any order where SMALL_ANY_ORDER allows (0 by default, by
measurement: docs/grammar.md "Property order"); every object taken is valid.

Mask-level: each text is fed byte by byte through a matcher (a byte vocabulary), so a token the
mask leaves out is refused; and over every permutation of a few keys, what the grammar takes is
checked against jsonschema (valid by construction) and against what the policy promises."""

from __future__ import annotations

import itertools
import json

import jsonschema
import pytest

import grammar
from grammar.frontends import json_order
from tests.grammar.conftest import byte_vocab
from tests.grammar.helpers import accepts_text

VOCAB = byte_vocab()
VALUES = {"a": 1, "b": "x", "c": True, "d": None, "e": 2, "f": "y", "g": False}
TYPES = {"a": "integer", "b": "string", "c": "boolean", "d": "null", "e": "integer", "f": "string", "g": "boolean"}


def _schema(keys: str, required: str, extra: bool = False) -> dict:
    return {"type": "object", "properties": {k: {"type": TYPES[k]} for k in keys}, "required": list(required),
            "additionalProperties": extra}  # fmt: skip


def _text(keys) -> str:
    return json.dumps({k: VALUES[k] for k in keys}, separators=(",", ":"))


def _subsequence(keys, order) -> bool:
    at = [order.index(k) for k in keys]
    return at == sorted(at)


@pytest.mark.parametrize("keys, required", [("abc", "b"), ("abc", ""), ("ab", "ab")])
def test_small_objects_take_every_order_once_each(keys: str, required: str, monkeypatch) -> None:
    monkeypatch.setattr(json_order, "SMALL_ANY_ORDER", 3)  # (off by default: measured, not worth its compile time)
    schema = _schema(keys, required)
    g = grammar.compile_json_schema(schema, VOCAB)
    for n in range(len(keys) + 1):
        for perm in itertools.permutations(keys, n):
            valid = set(required) <= set(perm)
            assert accepts_text(g, _text(perm)) is valid, perm
            if valid:
                jsonschema.validate(json.loads(_text(perm)), schema)
    assert not accepts_text(g, '{"a":1,"b":"x","a":2}')  # a member twice
    assert not accepts_text(g, '{"b":1}')  # a member keeps its schema
    assert not accepts_text(g, '{"b":"x","z":1}')  # closed


def test_large_objects_take_declared_order_or_required_first() -> None:
    """Seven members, `e` and `b` required (listed in that order): the texts taken are exactly those
    whose keys follow the declared order, or `e`, `b` and then the others in declared order."""
    keys, required = "abcdefg", "eb"
    assert len(keys) > json_order.SMALL_ANY_ORDER
    schema = _schema(keys, required)
    g = grammar.compile_json_schema(schema, VOCAB)
    req_first = [*required, *[k for k in keys if k not in required]]
    checked = 0
    for n in range(2, 5):
        for perm in itertools.permutations(keys, n):
            if not set(required) <= set(perm):
                assert not accepts_text(g, _text(perm)), perm
                continue
            promised = _subsequence(perm, keys) or _subsequence(perm, req_first)
            taken = accepts_text(g, _text(perm))
            assert taken is promised, perm
            if taken:
                jsonschema.validate(json.loads(_text(perm)), schema)
            checked += 1
    assert checked > 100
    assert accepts_text(g, _text("ebacdfg")) and accepts_text(g, _text("abcdefg"))
    assert not accepts_text(g, _text("bacdefg"))  # required, but not in `required`'s order
    assert not accepts_text(g, '{"e":2,"b":"x","e":2}')


def test_required_first_with_extra_members_and_flexible_whitespace() -> None:
    """Glaiveai2K calculate_area's shape: the schema lists `dimensions` before `shape`, `required`
    lists `shape` first, and instances write it first."""
    schema = {"type": "object", "required": ["shape", "dimensions"],
              "properties": {"dimensions": {"type": "object", "properties": {"radius": {"type": "number"}},
                                            "required": ["radius"]},
                             "kind": {"type": "string"}, "note": {"type": "string"}, "shape": {"type": "string"}}}  # fmt: skip
    g = grammar.compile_json_schema(schema, VOCAB, whitespace="flexible")
    assert accepts_text(g, '{"shape": "circle", "dimensions": {"radius": 5}}')
    assert accepts_text(g, '{ "shape":"c",\n "dimensions":{"radius":5}, "kind":"k", "z": [1] }')
    assert accepts_text(g, '{"dimensions":{"radius":5},"shape":"c"}')
    assert not accepts_text(g, '{"shape":"c"}')
    assert not accepts_text(g, '{"shape":"c","dimensions":{}}')
    assert not accepts_text(g, '{"shape":"c","dimensions":{"radius":5},"shape":"d"}')
    assert not accepts_text(g, '{"shape":"c","dimensions":{"radius":5},"kind":1}')


def test_required_first_under_dependencies() -> None:
    """An object under `dependencies` (a presence graph) also takes its required members first."""
    keys = "abcdef"
    schema = _schema(keys, "fe", extra=False)
    schema["dependencies"] = {"a": ["c"]}
    g = grammar.compile_json_schema(schema, VOCAB)
    assert accepts_text(g, _text("feac"))
    assert accepts_text(g, _text("acef"))
    assert not accepts_text(g, _text("fea"))  # a without c
    assert not accepts_text(g, '{"f":"y","e":2,"a":1,"c":true,"f":"y"}')  # a member twice
    for perm in itertools.permutations(keys, 4):
        if accepts_text(g, _text(perm)):
            jsonschema.validate(json.loads(_text(perm)), schema)


def test_any_order_policy_unchanged_and_declared_budget_is_shared() -> None:
    props = {f"p{i}": {"type": "integer"} for i in range(16)}
    g = grammar.compile_json_schema({"type": "object", "properties": props, "required": ["p3"]}, VOCAB)
    assert accepts_text(g, '{"p0":1,"p3":2}') and accepts_text(g, '{"p3":2,"p0":1}')
    assert not accepts_text(g, '{"p1":2,"p0":1,"p3":1}')


@pytest.mark.parametrize("order", ["declared", "any"])
def test_no_comma_once_every_member_is_written(order: str, monkeypatch) -> None:
    """A closed object whose members are all written takes no comma (a dead end: the mask would let
    a model write one and then allow nothing; found by test_real_tokenizer's random model)."""
    monkeypatch.setattr(json_order, "SMALL_ANY_ORDER", 3)
    g = grammar.compile_json_schema(_schema("abc", ""), VOCAB, property_order=order)
    for keys in itertools.permutations("abc"):
        m = g.matcher()
        assert all(m.accept(b) for b in _text(keys)[:-1].encode()), keys
        assert not m.accept(ord(",")), keys
        assert m.accept(ord("}")) and m.accept(VOCAB.eos_token_ids[0])
    open_g = grammar.compile_json_schema(_schema("abc", "", extra=True), VOCAB, property_order=order)
    assert accepts_text(open_g, '{"c":true,"a":1,"b":"x","z":0}')
