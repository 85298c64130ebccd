"""Issue 39, third pass: `not` beyond types (through json_conditions' exact negations), more than four
patternProperties with different schemas when their names do not overlap, and integral multipleOf
on numbers written with a zero fraction. Each checked against jsonschema."""

from __future__ import annotations

import json

import jsonschema
import pytest

import grammar
from tests.grammar.conftest import byte_vocab
from tests.grammar.helpers import accepts_text

VOCAB = byte_vocab()


def _agrees(schema: dict, texts: list[str]) -> None:
    g = grammar.compile_json_schema(schema, VOCAB)
    validator = jsonschema.validators.validator_for(schema)(schema)
    for text in texts:
        assert accepts_text(g, text) == validator.is_valid(json.loads(text)), text


VALUES = ['"abc"', '"..."', '" "', '""', '"a.b"', '"x"', "1", "null", "true", "{}", "[]", '{"path":"p"}', '{"path":1}',
          '{"channel":"c"}', '{"path":"p","channel":"c"}']  # fmt: skip


@pytest.mark.parametrize("schema", [
    {"type": "string", "minLength": 1, "not": {"pattern": "^[\\.\\,\\*\\s]+$"}},  # Github_ultra---o65431
    {"not": {"pattern": "^a"}},  # without a type: every non-string meets the pattern, so not is strings only
    {"not": {"type": "string", "maxLength": 1}},
    {"type": ["string", "null"], "not": {"enum": ["abc", None]}},
    {"not": {"const": "x"}},
    {"not": {"required": ["path"]}},
    {"type": "object", "not": {"properties": {"path": {"type": "string"}}, "required": ["path"]}},
    {"not": {"type": "object", "properties": {"channel": {"const": "c"}}}},
])  # fmt: skip
def test_negations_agree_with_jsonschema(schema: dict) -> None:
    _agrees(schema, VALUES)


def test_negation_without_an_exact_form_still_raises_naming_not() -> None:
    for negated in ({"minItems": 2}, {"type": "integer"}, {"format": "email"}, {"properties": {"a": {"pattern": "x"}}}):
        with pytest.raises(grammar.GrammarError, match="/not"):
            grammar.compile_json_schema({"type": ["string", "array", "number", "object"], "not": negated}, VOCAB)


PATTERNS = {f"^k{i}:(en|nl)$": {"type": "integer", "maximum": i} for i in range(6)}
PATTERNS["^s_[a-z]+$"] = {"type": "string"}


@pytest.mark.parametrize("extra", [False, {"type": "boolean"}])
def test_many_disjoint_patterns_with_different_schemas(extra) -> None:
    """Seven patterns with seven schemas (more than MAX_MIXED_PATTERNS): their names never overlap,
    so a name takes one pattern's schema and no subset of them is enumerated."""
    schema = {"type": "object", "properties": {"id": {"type": "string"}}, "patternProperties": PATTERNS,
              "additionalProperties": extra}  # fmt: skip
    _agrees(schema, ['{"id":"a","k3:en":3,"k5:nl":5,"s_x":"y"}', '{"k3:en":4}', '{"k0:en":0,"k0:nl":-1}',
                     '{"s_ab":1}', '{"k9:en":1}', '{"other":true}', '{"other":1}', '{"k1:de":true}'])


def test_overlapping_patterns_beyond_the_limit_still_raise() -> None:
    overlapping = {f"^a{'.' * i}": {"maximum": i} for i in range(5)}
    with pytest.raises(grammar.GrammarError, match="patternProperties"):
        grammar.compile_json_schema({"type": "object", "patternProperties": overlapping}, VOCAB)


@pytest.mark.parametrize("schema", [
    {"type": "number", "multipleOf": 1, "minimum": 0, "maximum": 99999999},  # Github_ultra---o46322
    {"type": "number", "multipleOf": 5},
])  # fmt: skip
def test_integral_multiple_of_on_numbers_takes_a_zero_fraction(schema: dict) -> None:
    _agrees(schema, ["6000", "6000.0", "6000.00", "6000.5", "-5.0", "0.0", "7.0", "-0.5"])
    assert not accepts_text(grammar.compile_json_schema(schema, VOCAB), "5.")
