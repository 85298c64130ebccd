"""propertyNames (issue 39): declared names checked as a validator does, extra names within its language."""

from __future__ import annotations

import json

import jsonschema
import pytest

import grammar
from tests.grammar.conftest import byte_vocab
from tests.grammar.helpers import accepts_text

VOCAB = byte_vocab()
LOWER = {"type": "object", "propertyNames": {"pattern": "^[a-z0-9_-]{1,8}$"}, "additionalProperties": {"type": "integer"}}
DECLARED = {"type": "object", "properties": {"ok": {"type": "integer"}, "Bad": {"type": "integer"}},
            "propertyNames": {"maxLength": 2}}  # fmt: skip
ENUM = {"type": "object", "propertyNames": {"enum": ["a", "b"]}, "patternProperties": {"^a": {"type": "string"}}}
FORMAT = {"type": "object", "propertyNames": {"format": "uuid"}}


@pytest.mark.parametrize("schema, text", [
    (LOWER, '{"abc":1,"x_1":2}'), (LOWER, '{"ABC":1}'), (LOWER, '{"toolongname":1}'), (LOWER, "{}"), (LOWER, '{"":1}'),
    (DECLARED, '{"ok":1}'), (DECLARED, '{"Bad":1}'), (DECLARED, '{"z":1}'), (DECLARED, '{"zzz":1}'),
    (ENUM, '{"a":"s"}'), (ENUM, '{"a":1}'), (ENUM, '{"b":1}'), (ENUM, '{"c":1}'), (ENUM, '{"ab":"s"}'),
    (FORMAT, '{"123e4567-e89b-12d3-a456-426614174000":1}'), (FORMAT, '{"x":1}'),
])  # fmt: skip
def test_property_names_agree_with_jsonschema(schema: dict, text: str) -> None:
    valid = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).is_valid(json.loads(text))
    assert accepts_text(grammar.compile_json_schema(schema, VOCAB), text) is valid, text


def test_a_required_name_outside_property_names_is_impossible() -> None:
    with pytest.raises(grammar.GrammarError, match="accepts no value"):
        grammar.compile_json_schema({"type": "object", "required": ["Long"], "propertyNames": {"maxLength": 2}}, VOCAB)


def test_non_string_keywords_in_property_names_raise_naming_it() -> None:
    with pytest.raises(grammar.GrammarError, match="/propertyNames"):
        grammar.compile_json_schema({"type": "object", "propertyNames": {"minimum": 3}}, VOCAB)


PARTS = {"allOf": [
    {"type": "object", "properties": {"a": {"type": "integer"}}, "patternProperties": {"^x-": {"type": "string"}}},
    {"properties": {"b": {"type": "boolean"}}, "patternProperties": {"^x-": {"maxLength": 2}, "^n": {"type": "null"}},
     "required": ["b"]},
]}  # fmt: skip


@pytest.mark.parametrize("text", ['{"a":1,"b":true}', '{"b":true,"x-k":"ab"}', '{"b":true,"x-k":"abc"}',
                                  '{"b":true,"x-k":1}', '{"b":true,"nn":null}', '{"b":true,"nn":1}', '{"a":1}',
                                  '{"b":true,"zz":[1]}', '{"b":true,"a":"s"}'])  # fmt: skip
def test_pattern_properties_merged_through_all_of_agree_with_jsonschema(text: str) -> None:
    """Both parts open: the merged properties and patterns are exact (issue 39)."""
    valid = jsonschema.Draft202012Validator(PARTS).is_valid(json.loads(text))
    assert accepts_text(grammar.compile_json_schema(PARTS, VOCAB), text) is valid, text


def test_pattern_properties_merged_beside_additional_properties_still_raise() -> None:
    schema = {"allOf": [{"properties": {"a": {}}}, {"patternProperties": {"^b": {}}, "additionalProperties": False}]}
    with pytest.raises(grammar.GrammarError, match="/allOf"):
        grammar.compile_json_schema(schema, VOCAB)


def test_pattern_properties_merged_with_a_required_only_part() -> None:
    schema = {"allOf": [{"type": "object", "patternProperties": {"^[^$]": {"type": "integer"}}, "additionalProperties": False},
                        {"required": ["_id"]}]}  # fmt: skip
    g = grammar.compile_json_schema(schema, VOCAB)
    assert accepts_text(g, '{"_id":1,"a":2}') and not accepts_text(g, '{"a":2}') and not accepts_text(g, '{"_id":1,"$x":2}')
