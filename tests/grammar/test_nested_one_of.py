"""A oneOf inside an overlapping oneOf (issue 39): the inner one read as the anyOf of its branches where
another branch is judged, narrowed first where its own branch is compiled; never an invalid instance."""

from __future__ import annotations

import json

import jsonschema
import pytest

import grammar
from tests.grammar.conftest import byte_vocab
from tests.grammar.helpers import accepts_text

VOCAB = byte_vocab()
SHAPE = {"oneOf": [
    {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}}, "required": ["kind", "r"]},
    {"type": "object", "properties": {"kind": {"const": "poly"}}, "required": ["kind"],
     "oneOf": [{"properties": {"n": {"const": 3}}, "required": ["n"]},
               {"properties": {"n": {"const": 4}, "square": {"type": "boolean"}}, "required": ["n", "square"]}]},
    {"type": "string"},
    {"type": "string", "maxLength": 2},
]}  # fmt: skip
FILES = {"type": "object", "required": ["status"], "oneOf": [
    {"properties": {"status": {"const": "ok"}}, "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
    {"properties": {"status": {"const": "error"}, "message": {"type": "string"}}, "required": ["message"]},
]}  # fmt: skip


@pytest.mark.parametrize("schema, text, accepted", [
    (SHAPE, '{"kind":"circle","r":1}', True),
    (SHAPE, '{"kind":"poly","n":3}', True),
    (SHAPE, '{"kind":"poly","n":4,"square":true}', True),
    (SHAPE, '{"kind":"poly","n":5}', False),
    (SHAPE, '{"kind":"poly","n":4}', False),
    (SHAPE, '"abc"', True),
    (SHAPE, '"ab"', False),  # valid under both string branches: oneOf refuses it
    (FILES, '{"status":"ok","a":1}', True),
    (FILES, '{"status":"ok","b":1}', True),
    (FILES, '{"status":"ok","a":1,"b":2}', False),  # both inner branches: the inner oneOf refuses it
    (FILES, '{"status":"error","message":"x"}', True),
    (FILES, '{"status":"ok"}', False),
])  # fmt: skip
def test_nested_one_of(schema: dict, text: str, accepted: bool) -> None:
    assert jsonschema.Draft202012Validator(schema).is_valid(json.loads(text)) is accepted  # the table is right
    g = grammar.compile_json_schema(schema, VOCAB)
    assert accepts_text(g, text) is accepted, text
