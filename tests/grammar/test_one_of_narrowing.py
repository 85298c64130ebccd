"""Overlapping `oneOf` branches narrowed exactly (issue 39, fifth pass): by the other branch's finite
values for a property ours rejects, by a property a closed other branch never allows, and by a
property both declare, narrowed one level down. Each valid text is fed byte by byte and checked
with jsonschema; each invalid one (valid under two branches, or under none) must be refused."""

from __future__ import annotations

import json

import jsonschema
import pytest

import grammar
from tests.grammar.conftest import byte_vocab
from tests.grammar.helpers import accepts_text

VOCAB = byte_vocab()

# the other branch's values for `changes` are a finite set that ours rejects (either way round)
OTHER_VALUES = {"type": "object", "oneOf": [
    {"required": ["changes", "mode"], "properties": {"changes": {"type": "array", "items": {"enum": ["size", "mode"]}},
                                                     "mode": {"type": "string"}}},
    {"required": ["changes"], "properties": {"changes": {"enum": [["deleted"]]}}}]}  # fmt: skip
# a property both require, whose objects differ one level down (the other requires what ours lacks)
NESTED = {"type": "object", "oneOf": [
    {"required": ["content"], "properties": {"content": {"type": "object", "required": ["image"],
                                                         "properties": {"image": {"type": "string"}}}}},
    {"required": ["content"], "properties": {"content": {"type": "object", "required": ["src", "alt"],
                                                         "properties": {"src": {"type": "string"}, "alt": {"type": "string"}}}}}]}  # fmt: skip
# closed branches that share only the empty object
CLOSED = {"oneOf": [{"type": "object", "additionalProperties": False, "properties": {"except": {"type": "array"}}},
                    {"type": "object", "additionalProperties": False, "properties": {"only": {"type": "array"}}}]}  # fmt: skip
# a string discriminator by pattern, required by both
PATTERNS = {"type": "object", "oneOf": [
    {"required": ["status", "data"], "properties": {"status": {"type": "string", "pattern": "^fail$"}}},
    {"required": ["status", "data"], "properties": {"status": {"type": "string", "pattern": "^error$"}}}]}  # fmt: skip
# a discriminator one level down that only one branch's values pin, in an optional property
OPTIONAL_NESTED = {"type": "object", "required": ["items"], "oneOf": [
    {"properties": {"attrs": {"type": "object", "required": ["init"],
                              "properties": {"init": {"type": "string", "not": {"enum": ["upstart"]}}}},
                    "items": {"type": "array", "items": {"type": "integer"}}}},
    {"properties": {"attrs": {"type": "object", "required": ["init"], "properties": {"init": {"enum": ["upstart"]}}},
                    "items": {"type": "array", "items": {"type": "integer", "minimum": 0}}}}]}  # fmt: skip

# closed branches told apart by their names: a required name no pattern of the other matches, names
# (declared or by pattern) the other can never hold, and a member matched by the other's pattern
# whose values that pattern's schema (itself a oneOf) rejects
PX = {"type": "string", "pattern": "^[1-9][0-9]*px$"}
BY_NAMES = {"oneOf": [
    {"type": "object", "additionalProperties": False, "required": ["size"],
     "properties": {"size": {"type": "number"}, "style": {"enum": ["italic", "normal"]}}},
    PX,
    {"type": "object", "additionalProperties": False, "required": ["ref"], "properties": {"ref": {"type": "string"}}},
    {"type": "object", "additionalProperties": False, "minProperties": 1, "patternProperties": {"^[0-9]+x$": {"type": "integer"}}},
    {"type": "object", "additionalProperties": False, "minProperties": 1,
     "patternProperties": {"^[a-z]{2,3}$": {"oneOf": [PX, {"type": "object", "required": ["size"]}]}}}]}  # fmt: skip

CASES = [
    (OTHER_VALUES, ['{"changes":["size"],"mode":"644"}', '{"changes":["deleted"]}', '{"changes":["deleted"],"mode":"x"}'],
     ['{"changes":["size"]}', "{}", '{"changes":["other"],"mode":"x"}']),
    (NESTED, ['{"content":{"image":"a"}}', '{"content":{"src":"s","alt":"a"}}'],
     ['{"content":{"image":"a","src":"s","alt":"a"}}', '{"content":{}}', "{}"]),
    (CLOSED, ['{"except":[]}', '{"only":[1]}'], ["{}", '{"except":[],"only":[]}']),
    (PATTERNS, ['{"status":"fail","data":1}', '{"status":"error","data":null}'],
     ['{"status":"ok","data":1}', '{"status":"fail"}']),
    (OPTIONAL_NESTED, ['{"attrs":{"init":"systemd"},"items":[-1]}', '{"attrs":{"init":"upstart"},"items":[1]}'],
     ['{"items":[1]}', '{"attrs":{"init":"systemd"},"items":["x"]}']),
    (BY_NAMES, ['{"size":1}', '"12px"', '{"ref":"font1"}', '{"2x":3}', '{"en":"12px"}', '{"size":2,"style":"normal"}'],
     ['{"ref":"12px"}', "{}", '{"2x":"a"}', '{"size":1,"2x":1}', '{"en":"x"}']),
]


@pytest.mark.parametrize("schema, good, bad", CASES,
                         ids=["other-values", "nested", "closed", "patterns", "optional-nested", "by-names"])
@pytest.mark.parametrize("whitespace", ["compact", "flexible"])
def test_narrowed_exactly(schema, good, bad, whitespace):
    g = grammar.compile_json_schema(schema, VOCAB, whitespace=whitespace)
    for text in good:
        jsonschema.Draft7Validator(schema).validate(json.loads(text))
        assert accepts_text(g, text), text
    for text in bad:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.Draft7Validator(schema).validate(json.loads(text))
        assert not accepts_text(g, text), text
