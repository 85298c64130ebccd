"""`not` of an `anyOf` (issue 39, fifth pass): not (A or B) = not A and not B, each branch negated
exactly, their conjunction as the union of one choice from each (the same branch twice once; at
most MAX_NEGATED_PRODUCT schemas). Texts fed byte by byte, checked with jsonschema."""

from __future__ import annotations

import json

import jsonschema
import pytest

import grammar
from tests.grammar.conftest import byte_vocab
from tests.grammar.helpers import accepts_text

VOCAB = byte_vocab()

PATH = {"properties": {"path": {"type": "string"}}, "required": ["path"]}
CASES = [
    ({"type": "object", "not": {"anyOf": [PATH, PATH]}}, ['{"channel":"x"}', '{"path":1}', "{}"], ['{"path":"p"}']),
    ({"type": "object", "not": {"anyOf": [{"required": ["a"]}, {"properties": {"b": {"const": "x"}}, "required": ["b"]}]}},
     ["{}", '{"b":"y"}', '{"b":2}', '{"c":1}'], ['{"a":0}', '{"b":"x"}', '{"a":0,"b":2}']),
    ({"not": {"anyOf": [{"type": "string"}, {"type": "number", "minimum": 5}]}}, ["1", "null", "4.5", "[]"],
     ['"s"', "5", "7.5"]),
    # the rust-toolchain shape: two presence rules merged into one `not (anyOf ...)`
    ({"type": "object", "properties": {"path": {"type": "string"}, "channel": {"type": "string"}},
      "allOf": [{"not": PATH}, {"not": {"properties": {"channel": {"type": "string"}}, "required": ["channel"]}}]},
     ["{}", '{"x":1}'], ['{"path":"p"}', '{"channel":"c"}']),
]


@pytest.mark.parametrize("schema, good, bad", CASES, ids=["same-branch", "required-or-const", "types-and-bound",
                                                          "merged-nots"])
@pytest.mark.parametrize("whitespace", ["compact", "flexible"])
def test_not_any_of_exact(schema, good, bad, whitespace):
    g = grammar.compile_json_schema(schema, VOCAB, whitespace=whitespace)
    validator = jsonschema.Draft7Validator(schema)
    for text in good:
        validator.validate(json.loads(text))
        assert accepts_text(g, text), text
    for text in bad:
        assert not validator.is_valid(json.loads(text)), text
        assert not accepts_text(g, text), text


def test_too_many_parts_stay_refused():
    branches = [{"properties": {f"p{i}": {"type": "string"}}, "required": [f"p{i}"]} for i in range(6)]
    with pytest.raises(grammar.GrammarError, match="/not"):
        grammar.compile_json_schema({"type": "object", "not": {"anyOf": branches}}, VOCAB)
