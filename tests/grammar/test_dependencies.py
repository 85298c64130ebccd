"""Property dependencies (dependentRequired, dependencies, dependentSchemas with `required`), checked
exhaustively against jsonschema over every subset of the keys, emitted in declared order."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

import grammar
from tests.grammar.conftest import byte_vocab
from tests.grammar.helpers import accepts_text, allowed

VOCAB = byte_vocab()
PROPS = {k: {"type": "integer"} for k in "abcd"}
DRAFT7 = "http://json-schema.org/draft-07/schema#"


def _agrees(schema: dict, keys: str = "abcdx") -> None:
    """Every object over `keys` (a-d declared, in order; x extra; z undeclared but named by a rule)
    is accepted exactly when valid."""
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


@pytest.mark.parametrize("table", [{"a": ["z"]}, {"z": ["a"]}, {"z": ["b", "c"], "c": ["z"]}])
@pytest.mark.parametrize("required", [[], ["z"]])
def test_rules_naming_an_undeclared_property_beside_extra_ones(table, required):
    """An undeclared name a rule mentions (issue 39: a GrammarError before) is an optional member
    after the declared ones (its schema: an extra member's), so the rule sees it; every object over
    a-d, z, x in that order is accepted exactly when valid."""
    _agrees({"type": "object", "properties": PROPS, "required": required, "dependentRequired": table}, keys="abcdzx")
    _agrees({"type": "object", "properties": PROPS, "required": required,
             "oneOf": [{"required": ["a"]}, {"required": ["z", "b"]}]}, keys="abcdzx")  # fmt: skip


def test_an_undeclared_name_keeps_its_place_before_other_extras():
    """Its place is fixed: after the declared properties, before the other extra members (a subset
    of the valid objects, never an invalid one)."""
    schema = {"type": "object", "properties": PROPS, "additionalProperties": {"type": "integer"},
              "dependentRequired": {"z": ["a"]}}  # fmt: skip
    g = grammar.compile_json_schema(schema, VOCAB)
    assert accepts_text(g, '{"a":1,"z":2,"x":3}')
    assert not accepts_text(g, '{"a":1,"x":3,"z":2}')  # valid, but z after another extra
    assert not accepts_text(g, '{"z":"s","a":1}') and not accepts_text(g, '{"z":2}')


SCHEMA_DEPENDENCIES = [
    {"a": {"properties": {"b": {"minimum": 5}}}},
    {"a": {"properties": {"b": {"minimum": 5}}, "required": ["c"]}, "d": {"maxProperties": 2}},
    {"c": {"not": {"required": ["d"]}}},
    {"a": {"anyOf": [{"required": ["c"]}, {"required": ["b"]}]}},
    {"x": {"properties": {"a": {"maximum": 0}}}},
]


@pytest.mark.parametrize("table", SCHEMA_DEPENDENCIES)
@pytest.mark.parametrize("draft7", [True, False])
def test_schema_dependencies_agree_with_jsonschema(table, draft7):
    """A dependent schema beyond `required` (a GrammarError before issue 39) is an anyOf: the object
    without its trigger, or with it and the dependent schema."""
    props = {k: {"type": "integer"} for k in "abcd"}
    if draft7:
        _agrees({"$schema": DRAFT7, "type": "object", "properties": props, "dependencies": table})
    else:
        _agrees({"type": "object", "properties": props, "dependentSchemas": table})
    for value in (0, 9):  # the dependent schema's own keywords, not only presence
        schema = {"type": "object", "properties": props, "dependentSchemas": table}
        g = grammar.compile_json_schema(schema, VOCAB)
        for instance in ({"a": 1, "b": value, "c": 1}, {"a": value, "b": value, "x": 1}, {"b": value}):
            valid = jsonschema.Draft202012Validator(schema).is_valid(instance)
            assert accepts_text(g, json.dumps(instance, separators=(",", ":"))) == valid, instance


@pytest.mark.parametrize("schema, pointer", [
    ({"type": "object", "properties": PROPS, "dependentRequired": {"a": "b"}}, "/dependentRequired/a"),
    ({"type": "object", "properties": PROPS, "dependentRequired": {"a": ["b"]}, "minProperties": 2}, "/minProperties"),
    ({"type": "object", "properties": PROPS, "oneOf": [{"required": ["a"]}, {"required": ["b"]}], "maxProperties": 2},
     "/maxProperties"),
])  # fmt: skip
def test_unsupported_dependencies_raise_with_their_pointer(schema, pointer):
    with pytest.raises(grammar.GrammarError, match=pointer):
        grammar.compile_json_schema(schema, VOCAB)


ONE_OF_TABLES = [
    [["a"], ["b"]],
    [["a"], ["b", "c"], ["c", "d"]],  # overlapping required sets
    [["a", "b"], ["a"]],  # one contains the other: only a without b
    [[], ["d"]],  # an empty branch: d must be absent
    [["c"], ["a"], ["d"], ["b"]],
]


@pytest.mark.parametrize("branches", ONE_OF_TABLES)
@pytest.mark.parametrize("extra", [True, False])
def test_one_of_required_branches_agree_with_jsonschema(branches, extra):
    _agrees({"type": "object", "properties": PROPS, "additionalProperties": extra,
             "oneOf": [{"required": r, "title": "t"} for r in branches]})  # fmt: skip


def test_one_of_required_with_dependencies_and_refs():
    _agrees({"$defs": {"wa": {"required": ["a"]}, "base": {"type": "object", "properties": PROPS}},
             "allOf": [{"$ref": "#/$defs/base"}], "dependentRequired": {"b": ["c"]},
             "oneOf": [{"$ref": "#/$defs/wa"}, {"required": ["b"]}]})  # fmt: skip


def test_one_of_required_excludes_non_objects():
    """A non-object satisfies every `required` branch, so with two branches none is valid."""
    schema = {"type": ["object", "null", "integer"], "properties": PROPS, "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}
    g = grammar.compile_json_schema(schema, VOCAB)
    assert not accepts_text(g, "null") and not accepts_text(g, "1")
    assert accepts_text(g, '{"a":1}') and not accepts_text(g, '{"a":1,"b":2}')
    assert not jsonschema.Draft202012Validator(schema).is_valid(None)


def test_one_of_required_nested_in_items_and_unsatisfiable():
    schema = {"type": "array", "items": {"type": "object", "properties": PROPS, "additionalProperties": False,
                                         "oneOf": [{"required": ["a"]}, {"required": ["zz"]}]}}  # fmt: skip
    g = grammar.compile_json_schema(schema, VOCAB)
    assert accepts_text(g, '[{"a":1},{"a":2,"b":3}]')
    assert not accepts_text(g, '[{"b":1}]')
    open_one = grammar.compile_json_schema({"type": "object", "properties": PROPS,
                                           "oneOf": [{"required": ["a"]}, {"required": ["zz"]}]}, VOCAB)  # fmt: skip
    assert accepts_text(open_one, '{"a":1}') and accepts_text(open_one, '{"zz":1}')
    assert not accepts_text(open_one, '{"a":1,"zz":1}') and not accepts_text(open_one, '{"b":1}')


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": PROPS, "oneOf": [{"required": ["a", "b"]}, {"required": ["a"]}, {"required": ["d"]}]},
    {"type": "object", "properties": PROPS, "additionalProperties": False, "dependentRequired": {"d": ["a"], "b": ["d"]}},
])  # fmt: skip
def test_every_allowed_prefix_can_be_completed(schema):
    """Random walks under the mask: the mask is never empty before EOS (no dead state left
    after pruning), and every completed output is valid."""
    g = grammar.compile_json_schema(schema, VOCAB)
    eos = VOCAB.eos_token_ids[0]
    rng = random.Random(3)
    for _ in range(60):
        m, out = g.matcher(), b""
        for _ in range(400):
            options = sorted(allowed(m, VOCAB))
            assert options, out
            if eos in options and (rng.random() < 0.3 or len(out) > 60 or options == [eos]):
                break
            small = [t for t in options if t != eos and (len(out) < 60 or t in b'}",')] or [t for t in options if t != eos]
            token = rng.choice(small)
            assert m.accept(token)
            out += bytes([token])
        assert m.accept(eos), out
        assert jsonschema.Draft202012Validator(schema).is_valid(json.loads(out)), out


_DIGEST = """
import hashlib, sys
sys.path.insert(0, sys.argv[1])
from grammar.automaton.nfa import build_nfa
from grammar.frontends.json_schema import compile_schema_to_grammar
schema = {"type": "object", "properties": {k: {"type": "integer"} for k in "abcdef"},
          "dependencies": {"a": ["b", "c"], "c": ["d"], "e": ["f", "a"]}}
n = build_nfa(compile_schema_to_grammar(schema))
print(hashlib.sha1(repr((n.byte_edges, n.eps, n.calls)).encode()).hexdigest())
"""


def test_the_presence_automaton_does_not_depend_on_the_hash_seed():
    """Its states were numbered in a set's order, which follows the string hash seed: the same
    schema gave a different (equivalent) NFA in each process (30 of the 2,000 dev compiles)."""
    root = str(Path(__file__).resolve().parents[2])
    digests = {subprocess.run([sys.executable, "-c", _DIGEST, root], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("0", "1", "2", "3")}
    assert len(digests) == 1


def test_an_undeclared_name_property_names_refuses_is_never_present():
    """propertyNames refuses `zz`, so no extra member is named so: `a`, which needs it, is never present."""
    _agrees({"type": "object", "properties": PROPS, "propertyNames": {"maxLength": 1}, "dependentRequired": {"a": ["zz"]}})
