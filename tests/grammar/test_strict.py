"""Strict mode (compile_json_schema(strict=True)): objects that name their properties and tuples
without `items` are closed; free-form objects and arrays, and the default mode, keep JSON Schema's meaning."""

from __future__ import annotations

import json

import jsonschema
import pytest

import grammar
from grammar.frontends.json_closed import closed_copy
from tests.grammar.conftest import byte_vocab
from tests.grammar.helpers import accepts_text

VOCAB = byte_vocab()
DRAFT7 = "http://json-schema.org/draft-07/schema#"
POINT = {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}, "required": ["x"]}
# (schema, accepted in both modes, accepted only in the default (open) mode)
CASES = [
    (POINT, ['{"x":1}', '{"x":1,"y":2}'], ['{"x":1,"z":3}', '{"x":1,"y":2,"z":[1]}']),
    ({"type": "object", "properties": {}}, ["{}"], ['{"a":1}']),
    ({"type": "object", "required": ["id"]}, ['{"id":[1]}'], ['{"id":1,"q":2}']),
    ({"type": "object"}, ["{}", '{"a":{"b":[1]}}'], []),  # names nothing: free-form in both
    ({"type": "object", "maxProperties": 1}, ['{"a":1}'], []),
    ({"type": "object", "properties": {"x": {"type": "integer"}}, "additionalProperties": {"type": "string"}},
     ['{"x":1,"y":"s"}'], []),
    ({"type": "object", "properties": {"x": {"type": "integer"}}, "additionalProperties": True}, ['{"x":1,"y":2}'], []),
    ({"type": "object", "properties": {"meta": {"type": "object"}}}, ['{"meta":{"k":1}}'], ['{"meta":{},"k":1}']),
    ({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}, ["[]", '["a"]', '["a",1]'],
     ['["a",1,2]', '["a",1,null]']),
    ({"$schema": DRAFT7, "type": "array", "items": [{"type": "string"}]}, ['["a"]'], ['["a",1]']),
    ({"$schema": DRAFT7, "type": "array", "items": [{"type": "string"}], "additionalItems": {"type": "integer"}},
     ['["a",1]'], []),
    ({"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}}, ['["a",1,2]'], []),
    ({"type": "array"}, ["[]", '[1,"a"]'], []),  # no prefix: free-form in both
    ({"type": "array", "items": POINT}, ['[{"x":1}]'], ['[{"x":1,"w":0}]']),
    ({"$defs": {"p": POINT}, "$ref": "#/$defs/p"}, ['{"x":1}'], ['{"x":1,"z":3}']),
    # allOf parts are merged before closing: the properties of every part are declared
    ({"allOf": [POINT, {"properties": {"z": {"type": "integer"}}}]}, ['{"x":1,"z":3}'], ['{"x":1,"w":3}']),
    ({"type": "object", "properties": {"kind": {"const": "a"}}, "anyOf": [{"properties": {"n": {"type": "integer"}}}]},
     ['{"kind":"a","n":1}'], ['{"kind":"a","n":1,"o":2}']),
]


@pytest.mark.parametrize(("schema", "both", "open_only"), CASES)
def test_strict_closes_what_names_its_members(schema, both, open_only):
    strict = grammar.compile_json_schema(schema, VOCAB, strict=True)
    default = grammar.compile_json_schema(schema, VOCAB)
    for text in both:
        assert accepts_text(strict, text), text
        assert accepts_text(default, text), text
    for text in open_only:
        jsonschema.validate(json.loads(text), schema)  # valid JSON Schema instances all the same
        assert accepts_text(default, text), text
        assert not accepts_text(strict, text), text


def test_strict_closes_pattern_properties_beside_properties():
    """Closed, the names other than the declared ones must match a pattern."""
    schema = {"type": "object", "properties": {"id": {"type": "integer"}},
              "patternProperties": {"^x-": {"type": "string"}}}  # fmt: skip
    assert accepts_text(grammar.compile_json_schema(schema, VOCAB), '{"id":1,"y":[2]}')
    g = grammar.compile_json_schema(schema, VOCAB, strict=True)
    assert accepts_text(g, '{"id":1,"x-a":"s"}')
    assert not accepts_text(g, '{"id":1,"x-a":1}')
    assert not accepts_text(g, '{"id":1,"y":"s"}')


def test_strict_enum_values_are_checked_closed():
    schema = {"properties": {"a": {"type": "integer"}}, "enum": [{"a": 1}, {"a": 1, "b": 2}]}
    assert accepts_text(grammar.compile_json_schema(schema, VOCAB), '{"a":1,"b":2}')
    strict = grammar.compile_json_schema(schema, VOCAB, strict=True)
    assert accepts_text(strict, '{"a":1}')
    assert not accepts_text(strict, '{"a":1,"b":2}')


def test_strict_one_of_of_closed_objects_is_exclusive():
    """Closed objects whose required names the other cannot hold never overlap: oneOf compiles."""
    schema = {"oneOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                        {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]}]}  # fmt: skip
    g = grammar.compile_json_schema(schema, VOCAB, strict=True)
    assert accepts_text(g, '{"a":1}') and accepts_text(g, '{"b":1}')
    assert not accepts_text(g, '{"a":1,"b":1}')
    open_objects = grammar.compile_json_schema(schema, VOCAB)  # narrowed: each branch lacks the other's name
    assert accepts_text(open_objects, '{"a":1,"c":2}') and not accepts_text(open_objects, '{"a":1,"b":1}')


def test_strict_is_part_of_the_cache_key():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert grammar.compile_json_schema(schema, VOCAB) is not grammar.compile_json_schema(schema, VOCAB, strict=True)
    assert grammar.compile_json_schema(schema, VOCAB, strict=True) is grammar.compile_json_schema(schema, VOCAB, strict=True)


def test_strict_structural_tag_closes_call_arguments():
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
              "required": ["city"]}  # fmt: skip
    spec = {"alternatives": [{"begin": "<tool_call>", "schema": schema, "end": "</tool_call>"}]}
    extra = '<tool_call>{"city":"Paris","type":["string"]}</tool_call>'
    assert accepts_text(grammar.compile_structural_tag(spec, VOCAB), extra)
    strict = grammar.compile_structural_tag(spec, VOCAB, strict=True)
    assert not accepts_text(strict, extra)
    assert accepts_text(strict, '<tool_call>{"city":"Paris","unit":"c"}</tool_call>')
    xml = {"alternatives": [{"begin": "<f>", "end": "</f>", "xml_params": {"begin": "<p={key}>", "end": "</p>"},
                             "schema": {"type": "object", "properties": {"opts": POINT}}}]}  # fmt: skip
    assert accepts_text(grammar.compile_structural_tag(xml, VOCAB), '<f><p=opts>{"x":1,"q":0}</p></f>')
    assert not accepts_text(grammar.compile_structural_tag(xml, VOCAB, strict=True), '<f><p=opts>{"x":1,"q":0}</p></f>')


def test_closed_copy_closes_nested_schemas_for_a_validator():
    closed = closed_copy({"$defs": {"p": POINT}, "type": "array", "prefixItems": [{"$ref": "#/$defs/p"}],
                          "items": False})  # fmt: skip
    assert closed["$defs"]["p"]["additionalProperties"] is False
    assert closed["items"] is False
    assert closed_copy({"type": "object"}) == {"type": "object"}
    assert closed_copy({"type": "array", "items": [True]})["additionalItems"] is False
    assert jsonschema.Draft202012Validator(closed).is_valid([{"x": 1}])
    assert not jsonschema.Draft202012Validator(closed).is_valid([{"x": 1, "z": 0}])
