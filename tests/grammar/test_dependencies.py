"""Property dependencies (dependentRequired, dependencies, dependentSchemas with `required`), checked
exhaustively against jsonschema over every subset of the keys, emitted in declared order."""

from __future__ import annotations

import json

import jsonschema
import pytest

import grammar
from tests.grammar.conftest import byte_vocab
from tests.grammar.helpers import accepts_text

VOCAB = byte_vocab()
PROPS = {k: {"type": "integer"} for k in "abcd"}
DRAFT7 = "http://json-schema.org/draft-07/schema#"


def _agrees(schema: dict, keys: str = "abcdx") -> None:
    """Every object over `keys` (a-d declared, in order; x extra) is accepted exactly when valid."""
    g = grammar.compile_json_schema(schema, VOCAB)
    validator = jsonschema.validators.validator_for(schema)(schema)
    accepted = 0
    for bits in range(1 << len(keys)):
        instance = {k: 1 for i, k in enumerate(keys) if bits >> i & 1}
        valid = validator.is_valid(instance)
        assert accepts_text(g, json.dumps(instance, separators=(",", ":"))) == valid, instance
        accepted += valid
    assert accepted  # the table is not vacuous


TABLES = [
    {"a": ["c"]},  # a later property needed
    {"c": ["a"]},  # an earlier one
    {"a": ["b"], "b": ["c"]},  # a chain
    {"a": ["d"], "d": ["a"]},  # both or neither
    {"b": ["a", "d"], "c": ["b"]},
    {"a": ["a"]},  # needs itself: nothing
    {"d": ["c", "b", "a"]},
]


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("required", [[], ["c"]])
@pytest.mark.parametrize("extra", [True, False])
def test_dependent_required_agrees_with_jsonschema(table, required, extra):
    _agrees({"type": "object", "properties": PROPS, "required": required, "additionalProperties": extra,
             "dependentRequired": table})  # fmt: skip


@pytest.mark.parametrize("table", TABLES)
def test_draft7_dependencies_array_and_required_schema_forms(table):
    _agrees({"$schema": DRAFT7, "type": "object", "properties": PROPS, "dependencies": table})
    _agrees({"$schema": DRAFT7, "type": "object", "properties": PROPS,
             "dependencies": {t: {"required": need, "description": "x"} for t, need in table.items()}})  # fmt: skip
    _agrees({"type": "object", "properties": PROPS, "dependentSchemas": {t: {"required": need} for t, need in table.items()}})


def test_undeclared_need_under_closed_object_forbids_the_trigger():
    _agrees({"type": "object", "properties": PROPS, "additionalProperties": False, "dependentRequired": {"b": ["zz"]}})


def test_property_that_cannot_appear_forbids_what_needs_it():
    props = {**PROPS, "b": False}
    _agrees({"type": "object", "properties": props, "dependentRequired": {"a": ["b"], "c": ["d"]}})


def test_dependencies_merge_across_all_of():
    _agrees({"allOf": [{"type": "object", "properties": PROPS, "dependentRequired": {"a": ["b"]}},
                       {"dependentRequired": {"a": ["c"], "d": ["a"]}}]})  # fmt: skip


def test_flexible_whitespace_and_nesting():
    schema = {"type": "array", "items": {"type": "object", "properties": PROPS, "dependentRequired": {"c": ["a"]}}}
    g = grammar.compile_json_schema(schema, VOCAB, whitespace="flexible")
    assert accepts_text(g, '[ { "a" : 1 , "c" : 2 } , {"b":1} ]')
    assert not accepts_text(g, '[{"a":1},{"c":2}]')


@pytest.mark.parametrize("schema, pointer", [
    ({"type": "object", "properties": PROPS, "dependentSchemas": {"a": {"properties": {"b": {"type": "string"}}}}},
     "/dependentSchemas/a"),
    ({"type": "object", "properties": PROPS, "dependentRequired": {"a": ["zz"]}}, "/dependentRequired/a"),
    ({"type": "object", "properties": PROPS, "dependentRequired": {"zz": ["a"]}}, "/dependentRequired/zz"),
    ({"type": "object", "properties": PROPS, "dependentRequired": {"a": "b"}}, "/dependentRequired/a"),
    ({"type": "object", "properties": PROPS, "dependentRequired": {"a": ["b"]}, "minProperties": 1}, "/minProperties"),
])  # fmt: skip
def test_unsupported_dependencies_raise_with_their_pointer(schema, pointer):
    with pytest.raises(grammar.GrammarError, match=pointer):
        grammar.compile_json_schema(schema, VOCAB)
