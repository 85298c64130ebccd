"""compile_json_schema_lenient (--structured-outputs-lenient, issue 39): where no exact grammar exists,
a wider one, with a note naming each relaxed keyword; exact schemas stay exact."""

from __future__ import annotations

import json

import jsonschema
import pytest

import grammar
from grammar.frontends.json_lenient import widen
from tests.grammar.conftest import byte_vocab
from tests.grammar.helpers import accepts_text

VOCAB = byte_vocab()

UNIQUE = {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}},
          "required": ["tags"]}  # fmt: skip
CONDITION = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
             "if": {"properties": {"a": {"pattern": "^x"}}}, "then": {"required": ["b"]}}  # fmt: skip
OVERLAP = {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}]}
NEGATED = {"type": "array", "items": {"type": "integer"}, "not": {"minItems": 3}}
MERGED = {"$defs": {"u": {"type": "array", "uniqueItems": True}}, "type": "object",
          "properties": {"x": {"allOf": [{"$ref": "#/$defs/u"}, {"items": {"type": "integer"}}]}}}  # fmt: skip


@pytest.mark.parametrize("schema, keyword, texts", [
    (UNIQUE, "/properties/tags/uniqueItems", ['{"tags":["a","b"]}', '{"tags":["a","a"]}', '{"tags":[]}']),
    (CONDITION, "/if", ['{"a":"xy","b":1}', '{"a":"xy"}', '{"a":"y"}', '{}']),
    (OVERLAP, "/oneOf", ["1", "-1", "2.5"]),
    (NEGATED, "/not", ["[]", "[1,2]", "[1,2,3]"]),
    (MERGED, "uniqueItems", ['{"x":[1,1]}', '{"x":[1,2]}']),
])  # fmt: skip
def test_a_refused_schema_compiles_wider_and_names_what_it_relaxed(schema, keyword, texts):
    with pytest.raises(grammar.GrammarError):  # the default stays a refusal naming the keyword
        grammar.compile_json_schema(schema, VOCAB)
    g, relaxed = grammar.compile_json_schema_lenient(schema, VOCAB)
    assert relaxed and keyword in relaxed[0]
    validator = jsonschema.validators.validator_for(schema)(schema)
    for text in texts:  # wider: every valid document still goes through, and the invalid ones named above too
        assert accepts_text(g, text), text
    assert any(not validator.is_valid(json.loads(t)) for t in texts)  # the check has something to report
    assert not accepts_text(g, '"not the type"') or schema is OVERLAP


def test_an_exact_schema_is_not_relaxed():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    g, relaxed = grammar.compile_json_schema_lenient(schema, VOCAB)
    assert relaxed == [] and accepts_text(g, '{"a":1}') and not accepts_text(g, "{}")


def test_widening_under_a_negation_drops_the_negation_not_the_keyword_inside():
    """Dropping `uniqueItems` inside a `not` would narrow the schema: the whole `not` goes instead."""
    schema = {"type": "array", "not": {"uniqueItems": True}}
    wider, note = widen(schema, "/not/uniqueItems: keyword 'uniqueItems' is not supported")
    assert wider == {"type": "array"} and note == "/not"


def test_a_schema_that_is_not_json_still_raises():
    with pytest.raises(grammar.GrammarError):
        grammar.compile_json_schema_lenient("{not json", VOCAB)
