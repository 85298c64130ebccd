"""if/then/else (issue 39): exact where the condition's negation is, a GrammarError naming `if` elsewhere."""

from __future__ import annotations

import json

import jsonschema
import pytest

import grammar
from tests.grammar.conftest import byte_vocab
from tests.grammar.helpers import accepts_text

VOCAB = byte_vocab()
KIND = {"type": "object", "properties": {"type": {"type": "string"}, "queries": {"type": "array"}, "n": {"type": "integer"}},
        "if": {"properties": {"type": {"const": "multi"}}}, "then": {"required": ["type", "queries"]}}  # fmt: skip
BOUND = {"type": ["number", "string", "null"], "if": {"maximum": 5}, "then": {"minimum": 5}, "else": {"minimum": 9, "exclusiveMaximum": 11}}
TYPED = {"if": {"type": "string"}, "then": {"maxLength": 2}, "else": {"type": "integer"}}
REQUIRED = {"type": "object", "properties": {"a": {"enum": ["x", "y"]}, "b": {"type": "integer"}},
            "if": {"type": "object", "properties": {"a": {"const": "x"}}, "required": ["a"]},
            "then": {"required": ["b"]}, "else": {"properties": {"b": {"maximum": 0}}}}  # fmt: skip


@pytest.mark.parametrize("schema, text", [
    (KIND, '{"type":"multi","queries":[]}'), (KIND, '{"type":"multi"}'), (KIND, '{"type":"single"}'), (KIND, "{}"),
    (KIND, '{"n":1}'), (KIND, '{"type":"multi","n":1}'),
    (BOUND, "5"), (BOUND, "4"), (BOUND, "9"), (BOUND, "10.5"), (BOUND, "11"), (BOUND, "7"), (BOUND, '"s"'), (BOUND, "null"),
    (TYPED, '"ab"'), (TYPED, '"abc"'), (TYPED, "3"), (TYPED, "3.5"), (TYPED, "null"),
    (REQUIRED, '{"a":"x","b":1}'), (REQUIRED, '{"a":"x"}'), (REQUIRED, '{"a":"y","b":1}'), (REQUIRED, '{"a":"y","b":0}'),
    (REQUIRED, '{"b":-1}'), (REQUIRED, '{"b":2}'), (REQUIRED, "{}"),
])  # fmt: skip
def test_if_then_else_agrees_with_jsonschema(schema: dict, text: str) -> None:
    valid = jsonschema.Draft202012Validator(schema).is_valid(json.loads(text))
    assert accepts_text(grammar.compile_json_schema(schema, VOCAB), text) is valid, text


def test_then_and_else_without_if_have_no_effect() -> None:
    g = grammar.compile_json_schema({"type": "integer", "then": {"minimum": 5}, "else": False}, VOCAB)
    assert accepts_text(g, "1")


@pytest.mark.parametrize("cond", [
    {"properties": {"type": {"pattern": "^t"}}},
    {"type": "integer"},
    {"properties": {"n": {"const": 3}}},
    {"minItems": 2},
])  # fmt: skip
def test_conditions_without_an_exact_negation_raise_naming_if(cond: dict) -> None:
    with pytest.raises(grammar.GrammarError, match="/if"):
        grammar.compile_json_schema({"if": cond, "then": {"type": "string"}}, VOCAB)
