"""Schemas refused before issue 39's fourth pass that compile exactly now: minProperties 1 beside
large member schemas or dependencies, and `if`/`then`/`else` inside an `allOf` part. Each valid
text is fed byte by byte (the mask refuses what the grammar does not take) and checked with
jsonschema; each invalid one must be refused."""

from __future__ import annotations

import json

import jsonschema
import pytest

import grammar
from tests.grammar.conftest import byte_vocab
from tests.grammar.helpers import accepts_text

VOCAB = byte_vocab()

LARGE = {"type": "object", "additionalProperties": False, "minProperties": 1,
         "properties": {"redirect": {"type": "object", "additionalProperties": False, "minProperties": 1,
                                     "maxProperties": 100, "patternProperties": {"^.{1,256}$": {"type": "string", "maxLength": 4096}}},
                        "value": {"type": "string", "maxLength": 4096}, "path": {"type": "string", "maxLength": 4096}}}  # fmt: skip
DEPENDENT = {"type": "object", "additionalProperties": False, "minProperties": 1, "dependencies": {"cost": ["costModel"]},
             "properties": {"action": {"type": "string"}, "cost": {"type": "number", "minimum": 0},
                            "costModel": {"enum": ["cpa", "cpc"]}}}  # fmt: skip
OPEN_DEPENDENT = {**DEPENDENT, "additionalProperties": {"type": "integer"}}
CONDITION = {"type": "object", "additionalProperties": False, "required": ["type", "field"],
             "properties": {"type": {"enum": ["equals", "multi"]}, "field": {"type": "string"},
                            "queries": {"type": "array", "items": {"type": "integer"}}},
             "allOf": [{"if": {"properties": {"type": {"const": "multi"}}}, "then": {"required": ["queries"]}},
                       {"properties": {"field": {"minLength": 1}}}]}  # fmt: skip

CASES = [
    (LARGE, ['{"value":"x"}', '{"value":"x","path":"p"}', '{"redirect":{"a":"b"}}'],
     ["{}", '{"redirect":{}}', '{"other":"x"}', '{"value":1}']),
    ({"type": "object", "minProperties": 1, "properties": {"a": {"type": "integer"}}},
     ['{"a":1}', '{"z":null}', '{"a":1,"z":[]}'], ["{}", '{"a":"x"}']),
    (DEPENDENT, ['{"action":"x"}', '{"cost":1,"costModel":"cpa"}', '{"costModel":"cpc"}'],
     ["{}", '{"cost":1}', '{"action":"x","cost":1}', '{"z":1}']),
    (OPEN_DEPENDENT, ['{"z":1}', '{"action":"x","z":2}'], ["{}", '{"z":"q"}', '{"cost":1,"z":1}']),
    (CONDITION, ['{"type":"equals","field":"f"}', '{"type":"multi","field":"f","queries":[1]}',
                 '{"type":"equals","field":"f","queries":[]}'],
     ['{"type":"multi","field":"f"}', '{"type":"equals","field":""}', '{"type":"other","field":"f"}']),
]


@pytest.mark.parametrize("schema, good, bad", CASES, ids=["large-min1", "open-min1", "dependencies-min1",
                                                         "open-dependencies-min1", "if-in-allOf"])
@pytest.mark.parametrize("whitespace", ["compact", "flexible"])
def test_compiles_exactly(schema, good, bad, whitespace):
    g = grammar.compile_json_schema(schema, VOCAB, whitespace=whitespace)
    for text in good:
        jsonschema.Draft7Validator(schema).validate(json.loads(text))  # (dependencies: draft 7)
        assert accepts_text(g, text), text
    for text in bad:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.Draft7Validator(schema).validate(json.loads(text))
        assert not accepts_text(g, text), text


def test_condition_in_all_of_refused_at_its_own_pointer():
    schema = {"type": "object", "allOf": [{"properties": {"a": {}}}, {"if": {"minItems": 2}, "then": {"required": ["a"]}}]}
    with pytest.raises(grammar.GrammarError, match="/allOf/1/if"):
        grammar.compile_json_schema(schema, VOCAB)


def test_min_properties_two_beside_dependencies_still_refused():
    with pytest.raises(grammar.GrammarError, match="minProperties"):
        grammar.compile_json_schema({**DEPENDENT, "minProperties": 2}, VOCAB)
