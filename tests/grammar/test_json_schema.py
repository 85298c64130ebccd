"""JSON Schema keywords, test-suite style: (schema, instance text, accepted) over a byte vocabulary."""

from __future__ import annotations

import json

import jsonschema
import pytest

import grammar
from tests.grammar.conftest import byte_vocab
from tests.grammar.helpers import accepts_text

VOCAB = byte_vocab()
OBJ = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["b"], "additionalProperties": False}
TREE = {
    "$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                       "required": ["v"], "additionalProperties": False}},
    "$ref": "#/$defs/node",
}
CASES = [
    ({"type": "integer"}, ["0", "-12", "7"], ["01", "1.5", "-", '"1"']),
    ({"type": "number"}, ["0", "-1.5", "2e10", "3.25E-2"], [".5", "1.", "01", "NaN"]),
    ({"type": "boolean"}, ["true", "false"], ["True", "1"]),
    ({"type": "null"}, ["null"], ["None", "0"]),
    ({"type": ["string", "null"]}, ['"x"', "null"], ["1"]),
    ({"type": "string", "nullable": True}, ['"x"', "null"], ["1"]),
    ({"type": "string"}, ['""', '"a\\"b"', '"\\u00e9t\\n"', '"日本"'], ['"a', '"\\x"', '"\n"', "'a'"]),
    ({"type": "string", "minLength": 2, "maxLength": 3}, ['"ab"', '"日本語"', '"\\n\\t"'], ['"a"', '"abcd"']),
    ({"type": "string", "pattern": "^[a-z]+\\d$"}, ['"ab1"'], ['"ab"', '"Ab1"', '"ab12"']),
    ({"type": "string", "pattern": "x"}, ['"axb"', '"x"'], ['"ab"']),
    ({"type": "string", "format": "date"}, ['"2024-02-29"'], ['"2024-13-01"', '"24-01-01"']),
    ({"type": "string", "format": "date-time"}, ['"2024-02-29T12:00:00Z"', '"2024-02-29T12:00:00.5+01:00"'], ['"2024-02-29 12:00"']),
    ({"type": "string", "format": "time"}, ['"23:59:59Z"'], ['"24:00:00Z"']),
    ({"type": "string", "format": "email"}, ['"a.b@example.com"'], ['"a@b"', '"@x.com"']),
    ({"type": "string", "format": "uuid"}, ['"123e4567-e89b-12d3-a456-426614174000"'], ['"123e4567"']),
    ({"type": "string", "format": "ipv4"}, ['"192.168.0.255"'], ['"256.1.1.1"', '"1.2.3"']),
    ({"type": "string", "format": "uri"}, ['"https://x.org/a?b=c#d"'], ['"no scheme"']),
    ({"type": "integer", "minimum": -3, "maximum": 250}, ["-3", "0", "250", "99"], ["-4", "251", "1000"]),
    ({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10}, ["1", "9"], ["0", "10"]),
    ({"type": "integer", "multipleOf": 3}, ["0", "-9", "12"], ["4", "-10"]),
    ({"type": "integer", "multipleOf": 5, "minimum": 7, "maximum": 30}, ["10", "30"], ["5", "35", "12"]),
    ({"type": "number", "minimum": 0.5, "maximum": 2.25}, ["0.5", "1", "2.25", "0.75"], ["0.4", "2.3", "-1"]),
    ({"type": "number", "multipleOf": 0.01}, ["1.25", "3"], ["1.255"]),
    ({"enum": ["a", 1, None, [1, 2]]}, ['"a"', "1", "null", "[1,2]"], ['"b"', "2"]),
    ({"const": {"k": "v"}}, ['{"k":"v"}'], ['{"k":"w"}']),
    ({"type": "string", "enum": ["a", 1]}, ['"a"'], ["1"]),
    (OBJ, ['{"b":"x"}', '{"a":1,"b":"x"}', '{"b":"x","a":1}'], ["{}", '{"a":1}', '{"b":"x","c":1}', '{"b":"x","a":1,"a":2}']),
    ({"type": "object", "properties": {"a": {"type": "integer"}}}, ["{}", '{"a":1}', '{"a":1,"z":[true,{"q":null}]}', '{"ab":"x"}'],
     ['{"a":"x"}', '{"z":1,"a":"x"}']),
    ({"type": "object", "additionalProperties": {"type": "integer"}}, ['{"x":1,"y":2}', "{}"], ['{"x":"1"}']),
    ({"type": "object", "required": ["id"]}, ['{"id":5}', '{"id":5,"q":1}'], ["{}"]),
    ({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3}, ["[1]", "[1,2,3]"], ["[]", "[1,2,3,4]", '["a"]']),
    ({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False}, ["[]", '["a"]', '["a",1]'], ['["a",1,2]', "[1]"]),
    ({"$schema": "http://json-schema.org/draft-07/schema#", "type": "array", "items": [{"type": "string"}], "additionalItems": {"type": "integer"}}, ['["a",1,2]'], ['["a","b"]']),
    ({"type": "array"}, ["[]", '[1,"a",[null]]'], ["[1,]"]),
    ({"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 5}]}, ['"s"', "5"], ["4", "null"]),
    ({"oneOf": [{"type": "string"}, {"type": "integer"}]}, ['"s"', "5"], ["null"]),
    ({"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                {"properties": {"b": {"type": "string"}}, "required": ["b"]}]}, ['{"a":1,"b":"x"}'], ['{"a":1}', '{"b":"x"}']),
    (TREE, ['{"v":1}', '{"v":1,"kids":[{"v":2,"kids":[{"v":3}]},{"v":4}]}'], ['{"v":1,"kids":[{}]}', '{"kids":[]}']),
    ({"type": "object", "properties": {"next": {"$ref": "#"}, "n": {"type": "integer"}}, "additionalProperties": False},
     ["{}", '{"next":{"next":{"n":1}}}'], ['{"next":1}']),
    ({"type": "object", "properties": {"a": False, "b": {"type": "integer"}}}, ['{"b":1}', '{"c":1}'], ['{"a":1}', '{"b":1,"a":2}']),
    ({"type": "array", "items": {"type": "integer", "minimum": 3, "maximum": 1}}, ["[]"], ["[1]", "[2]"]),
    (True, ["1", '{"a":[1,2.5,"x"]}', "null"], ["[1,"]),
    ({"type": "object", "properties": {"id": {"type": "integer"}}, "patternProperties": {"^x-[a-z]+$": {"type": "string"}},
      "additionalProperties": False},
     ['{"id":1}', '{"id":1,"x-ab":"q"}', '{"x-a":"q","x-b":"r"}'], ['{"id":1,"y":"q"}', '{"id":1,"x-ab":2}', '{"x-":"q"}']),
    ({"type": "object", "patternProperties": {".+": {"type": "string", "maxLength": 3}}, "additionalProperties": False},
     ["{}", '{"k":"abc","\u00e9":""}'], ['{"":"a"}', '{"k":"abcd"}', '{"k":1}']),
    ({"type": "object", "patternProperties": {"^a": {}}}, ['{"a":1}', '{"b":"x"}'], ['{"a"}']),
    ({"type": "object", "additionalProperties": {"type": "integer"}, "minProperties": 1, "maxProperties": 2},
     ['{"a":1}', '{"a":1,"b":2}'], ["{}", '{"a":1,"b":2,"c":3}', '{"a":"x"}']),
    ({"type": "object", "patternProperties": {"^k": {"type": "boolean"}}, "additionalProperties": False,
      "maxProperties": 1}, ["{}", '{"k1":true}'], ['{"k1":true,"k2":false}', '{"x":true}']),
    ({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "minProperties": 1,
      "additionalProperties": False}, ['{"a":1}', '{"b":2}', '{"a":1,"b":2}'], ["{}"]),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"], "minProperties": 2,
      "maxProperties": 3}, ['{"a":1,"x":2}', '{"a":1,"x":2,"y":3}'], ['{"a":1}', '{"a":1,"x":2,"y":3,"z":4}', '{"x":2,"y":3}']),
    ({"type": "object", "properties": {"a": {}, "b": {}, "c": {}}, "maxProperties": 2},
     ["{}", '{"a":1,"c":2}', '{"x":1,"y":2}'], ['{"a":1,"b":2,"c":3}', '{"a":1,"x":2,"y":3}']),
    ({"type": "object", "properties": {"a": {}}, "required": ["a"], "maxProperties": 0}, [], ["{}", '{"a":1}']),
    ({"type": ["string", "integer", "null"], "not": {"type": "string"}}, ["1", "null"], ['"a"', "true"]),
    ({"not": {"type": ["object", "array", "string", "number"]}}, ["null", "true"], ["1", "1.5", '"a"', "[]", "{}"]),
    ({"type": "object", "properties": {"a": {"not": {}}}}, ["{}", '{"b":1}'], ['{"a":1}']),
    ({"not": {"not": {"type": "integer"}}}, ["1"], ["1.5", '"a"']),
    ({"type": "object", "properties": {"a": {"type": "integer", "not": {"type": "number"}}}}, ["{}"], ['{"a":1}']),
    ({"enum": [1, "a", None], "not": {"type": "string"}}, ["1", "null"], ['"a"']),
    ({"allOf": [{"not": {"type": "null"}}, {"not": {"type": "string"}}], "type": ["null", "string", "boolean"]},
     ["true"], ["null", '"a"']),
    ({"minLength": 2, "not": {"type": ["string", "object", "array", "null", "number"]}}, ["true"], ['"ab"', "1"]),
    ({"enum": [2.0, "x"]}, ["2", "2.0"], ["2.5", "3"]),
    ({"allOf": [{"oneOf": [{"properties": {"s": {"const": "a"}, "n": {"type": "integer"}}, "required": ["s"]},
                           {"properties": {"s": {"const": "b"}}, "required": ["s"]}]},
                {"properties": {"id": {"type": "integer"}}}], "type": "object"},
     ['{"s":"a","n":1,"id":2}', '{"s":"b","id":2}'], ['{"id":2,"s":"a"}', '{"id":2,"s":"c"}', '{"s":"a","n":"1"}']),
    ({"type": "object", "properties": {"id": {"type": "integer"}},
      "oneOf": [{"properties": {"s": {"const": "a"}}, "required": ["s"]}, {"properties": {"s": {"const": "b"}}, "required": ["s"]}]},
     ['{"id":2,"s":"a"}', '{"s":"b"}', '{"s":"a","id":2}'], ['{"id":2}', '{"s":"a","id":"2"}']),
]


@pytest.mark.parametrize("schema, good, bad", CASES, ids=[json.dumps(c[0])[:50] for c in CASES])
def test_keyword_table(schema, good, bad):
    g = grammar.compile_json_schema(schema, VOCAB)
    for text in good:
        if not (isinstance(schema, dict) and "nullable" in schema):  # OpenAPI keyword, unknown to jsonschema
            jsonschema.validate(json.loads(text), schema if schema is not True else {})
        assert accepts_text(g, text), text
    for text in bad:
        assert not accepts_text(g, text), text


def test_flexible_whitespace_is_bounded():
    g = grammar.compile_json_schema(OBJ, VOCAB, whitespace="flexible")
    assert accepts_text(g, '{ "a" : 1,\n  "b": "x" }')
    assert not accepts_text(g, '{' + " " * 100 + '"b":"x"}')
    assert not accepts_text(grammar.compile_json_schema(OBJ, VOCAB), '{ "b":"x"}')


@pytest.mark.parametrize(
    "schema, fragment",
    [
        ({"not": {"type": "array", "minItems": 2}}, "/not"),
        ({"type": "object", "properties": {"x": {"if": {"minItems": 2}, "then": {}}}}, "/properties/x/if"),
        ({"allOf": [{"properties": {"a": {}}}, {"patternProperties": {"^b": {"type": "integer"}},
                                                 "additionalProperties": False}]}, "/allOf"),
        ({"type": "array", "items": {"type": "integer"}, "uniqueItems": True}, "/uniqueItems"),
        ({"type": "string", "format": "idn-hostname"}, "/format"),
        ({"$ref": "http://example.com/s.json"}, "/$ref"),
        ({"$ref": "#/$defs/missing"}, "/$ref"),
        ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, "/oneOf"),
        ({"type": "string", "pattern": "(?=a)"}, "/pattern"),
        ({"type": "object", "properties": {"a": {}}, "minProperties": 3000}, "/minProperties"),
        ({"type": "number", "not": {"type": "integer"}}, "/not"),
        ({"type": "string", "not": {"format": "email"}}, "/not"),
        ({"type": "integer", "multipleOf": 0.5}, "/multipleOf"),
        ({"type": "strin"}, "/type"),
        ("{not json", "JSON"),
    ],
)
def test_unsupported_or_invalid_schemas_raise_with_pointer(schema, fragment):
    with pytest.raises(grammar.GrammarError) as info:
        grammar.compile_json_schema(schema, VOCAB)
    assert fragment in str(info.value)


@pytest.mark.parametrize("required", [[], ["b"]])
@pytest.mark.parametrize("extra", [False, {"type": "integer"}])
@pytest.mark.parametrize("counts", [{"minProperties": 1}, {"minProperties": 2}, {"maxProperties": 1},
                                    {"maxProperties": 2}, {"minProperties": 1, "maxProperties": 3}])
def test_property_counts_beside_declared_properties_agree_with_jsonschema(required, extra, counts):
    """Every object over keys a, b (declared, in order) then x, y (extra) is accepted exactly
    when jsonschema says it is valid."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
              "required": required, "additionalProperties": extra, **counts}  # fmt: skip
    try:
        g = grammar.compile_json_schema(schema, VOCAB)
    except grammar.GrammarError:
        pytest.fail("counted properties should compile")
    keys = ["a", "b", "x", "y"]
    for bits in range(16):
        instance = {k: 1 for i, k in enumerate(keys) if bits >> i & 1}
        valid = jsonschema.Draft202012Validator(schema).is_valid(instance)
        assert accepts_text(g, json.dumps(instance, separators=(",", ":"))) == valid, instance
