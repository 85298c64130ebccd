"""Property order around required names (issue 39, fifth pass): the required names no property
declares (a pattern's members, or additionalProperties') come after the declared properties in the
order `required` lists them, with the other extra members before, between and after them; the names
a oneOf of `required` lists may come first. Each valid text is fed byte by byte and checked with
jsonschema; each invalid one must be refused."""

from __future__ import annotations

import json

import jsonschema
import pytest

import grammar
from grammar.frontends import json_order
from tests.grammar.conftest import byte_vocab
from tests.grammar.helpers import accepts_text

VOCAB = byte_vocab()

BY_PATTERN = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["x1", "x2"],
              "patternProperties": {"^x": {"type": "string"}}, "additionalProperties": False}  # fmt: skip
OPEN = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["id"],
        "additionalProperties": {"type": "number"}}  # fmt: skip


@pytest.mark.parametrize("schema, good, bad", [
    (BY_PATTERN, ['{"a":1,"x1":"p","xz":"q","x2":"r"}', '{"x1":"p","x2":"q"}', '{"x0":"s","x1":"p","x2":"q","x3":"t"}',
                  '{"a":1,"x0":"s","x1":"p","x2":"q"}'],
     ['{"x1":"p"}', '{"x1":1,"x2":"q"}', '{"a":1,"x1":"p","x2":"q","b":1}', '{"x0":"s"}', '{"x0":1,"x1":"p","x2":"q"}']),
    (OPEN, ['{"a":1,"id":2}', '{"z":1.5,"id":2,"y":3}', '{"id":0}'], ['{"a":1}', '{"z":1.5,"id":"x"}', '{"z":"s","id":1}']),
], ids=["pattern-named", "additional"])
@pytest.mark.parametrize("whitespace", ["compact", "flexible"])
def test_extra_members_around_required_undeclared(schema, good, bad, whitespace):
    g = grammar.compile_json_schema(schema, VOCAB, whitespace=whitespace)
    validator = jsonschema.Draft7Validator(schema)
    for text in good:
        validator.validate(json.loads(text))
        assert accepts_text(g, text), text
    for text in bad:
        assert not validator.is_valid(json.loads(text)), text
        assert not accepts_text(g, text), text


PIPELINE = {"type": "object", "oneOf": [{"required": ["run"]}, {"required": ["flow"]}],
            "properties": {"run": {"type": "string"}, "parameters": {"type": "object"}, "cache": {"type": "boolean"}}}  # fmt: skip


@pytest.mark.parametrize("whitespace", ["compact", "flexible"])
def test_one_of_required_names_may_come_first(whitespace):
    """A oneOf of `required` lists: the names it lists may come first (in its order), as the
    required members do, or in declared order (an undeclared one last)."""
    g = grammar.compile_json_schema(PIPELINE, VOCAB, whitespace=whitespace)
    validator = jsonschema.Draft7Validator(PIPELINE)
    good = ['{"flow":"f","parameters":{}}', '{"parameters":{},"flow":"f"}', '{"run":"r","cache":true}', '{"flow":[1],"cache":false}']
    bad = ['{"run":"r","flow":"f"}', '{"flow":"f","run":"r"}', '{"parameters":{}}', '{"cache":"x","run":"r"}', "{}"]
    for text in good:
        validator.validate(json.loads(text))
        assert accepts_text(g, text), text
    for text in bad:
        assert not validator.is_valid(json.loads(text)), text
        assert not accepts_text(g, text), text


HEADER = {"$schema": "http://json-schema.org/draft-07/schema#", "$ref": "#/definitions/doc",
          "definitions": {"doc": {"type": "object", "required": ["image"],
                                  "properties": {"image": {"type": "string"}, "tasks": {"type": "array"},
                                                 "inner": {"type": "object", "properties": {"a": {"type": "integer"}}}}}}}  # fmt: skip


@pytest.mark.parametrize("whitespace", ["compact", "flexible"])
def test_a_dollar_header_before_the_top_level_declared_members(whitespace):
    """By default (json_order.HEADER_FIRST) the document's top-level object (the root, or the $ref
    it is) also takes one extra member named `$...` before its first declared one (a "$schema"
    header); other extra names stay after the declared members, and nested objects keep declared
    order."""
    g = grammar.compile_json_schema({**HEADER, "title": f"header {whitespace}"}, VOCAB, whitespace=whitespace)
    validator = jsonschema.Draft7Validator(HEADER)
    good = ['{"$schema":"x","image":"i","tasks":[]}', '{"image":"i","z":1}', '{"$id":{"k":[1]},"image":"i","c":3}']
    bad = ['{"$schema":"x"}', '{"$schema":"x","image":1}', '{"$schema":"x","image":"i","inner":{"a":"s"}}']
    for text in good:
        validator.validate(json.loads(text))
        assert accepts_text(g, text), text
    for text in bad:
        assert not validator.is_valid(json.loads(text)), text
        assert not accepts_text(g, text), text
    for text in ['{"a":1,"image":"i"}', '{"image":"i","inner":{"$z":1,"a":2}}']:  # valid, not taken: not a `$` header
        assert validator.is_valid(json.loads(text)) and not accepts_text(g, text), text


def test_the_header_is_short():
    g = grammar.compile_json_schema({**HEADER, "title": "short header"}, VOCAB)
    two = '{"$a":1,"$b":2,"image":"i"}'  # valid, but two extra members before the first declared one
    assert jsonschema.Draft7Validator(HEADER).is_valid(json.loads(two)) and not accepts_text(g, two)


def test_the_header_keeps_closed_objects_and_name_rules():
    """No header where the object takes no extra member, none beyond what propertyNames or the
    patterns allow, and a declared `$` name is not taken twice."""
    closed = {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False}
    g = grammar.compile_json_schema(closed, VOCAB)
    assert accepts_text(g, '{"a":1}') and not accepts_text(g, '{"$schema":"x","a":1}')
    named = {"type": "object", "properties": {"a": {"type": "integer"}}, "propertyNames": {"maxLength": 3}}
    g = grammar.compile_json_schema(named, VOCAB)
    assert accepts_text(g, '{"$id":"x","a":1}') and not accepts_text(g, '{"$schema":"x","a":1}')
    typed = {"type": "object", "properties": {"a": {"type": "integer"}},
             "patternProperties": {"^\\$": {"type": "string"}}}
    g = grammar.compile_json_schema(typed, VOCAB)
    assert accepts_text(g, '{"$s":"x","a":1}') and not accepts_text(g, '{"$s":1,"a":1}')
    declared = {"type": "object", "properties": {"a": {"type": "integer"}, "$schema": {"type": "string"}}}
    g = grammar.compile_json_schema(declared, VOCAB)
    assert accepts_text(g, '{"a":1,"$schema":"x"}') and not accepts_text(g, '{"$schema":"x","a":1,"$schema":"y"}')


def test_no_header_when_switched_off(monkeypatch):
    monkeypatch.setattr(json_order, "HEADER_FIRST", False)
    g = grammar.compile_json_schema({**HEADER, "title": "no header"}, VOCAB)
    assert accepts_text(g, '{"image":"i","z":1}') and not accepts_text(g, '{"$schema":"x","image":"i"}')
