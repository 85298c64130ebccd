"""`unevaluatedProperties` beside `allOf`/`$ref` parts only (issue 39, fifth pass): the names left
unevaluated are those no part declares or matches, so it reads as additionalProperties of the merged
object; and the merge itself: a part's additionalProperties holds for the names only another part
declares. Texts fed byte by byte, checked with jsonschema (2020-12)."""

from __future__ import annotations

import json

import jsonschema
import pytest

import grammar
from tests.grammar.conftest import byte_vocab
from tests.grammar.helpers import accepts_text

VOCAB = byte_vocab()

BASE = {"$defs": {"base": {"properties": {"a": {"type": "string"}}, "required": ["a"]}}}
CASES = [
    ({**BASE, "type": "object", "allOf": [{"$ref": "#/$defs/base"}, {"properties": {"b": {"type": "integer"}}}],
      "unevaluatedProperties": False},
     ['{"a":"x"}', '{"a":"x","b":1}'], ['{"a":"x","c":1}', '{"a":"x","b":"s"}', "{}"]),
    ({**BASE, "type": "object", "$ref": "#/$defs/base", "patternProperties": {"^x-": {"type": "null"}},
      "unevaluatedProperties": {"type": "boolean"}},
     ['{"a":"x","z":true}', '{"a":"x","x-1":null}'], ['{"a":"x","z":1}', '{"a":"x","x-1":true}']),
    # a part's additionalProperties evaluates every name: nothing is left unevaluated
    ({"type": "object", "allOf": [{"additionalProperties": {"type": "integer"}}], "unevaluatedProperties": False},
     ['{"z":1}', "{}"], ['{"z":"s"}']),
    # the merge: a part's extra schema holds for names only another part declares
    ({"allOf": [{"additionalProperties": {"type": "integer"}}], "properties": {"a": {"type": "string"}}},
     ['{"z":1}', "{}"], ['{"a":"s"}', '{"a":1}']),
    ({"allOf": [{"properties": {"x": {}}, "additionalProperties": False},
                {"properties": {"y": {}}, "additionalProperties": False}]}, ["{}"], ['{"x":1}', '{"y":1}']),
]


@pytest.mark.parametrize("schema, good, bad", CASES, ids=["allOf-ref", "ref-patterns", "part-additional",
                                                          "merge-additional-schema", "merge-both-closed"])
def test_unevaluated_and_merge_exact(schema, good, bad):
    g = grammar.compile_json_schema(schema, VOCAB)
    validator = jsonschema.Draft202012Validator(schema)
    for text in good:
        validator.validate(json.loads(text))
        assert accepts_text(g, text), text
    for text in bad:
        assert not validator.is_valid(json.loads(text)), text
        assert not accepts_text(g, text), text


@pytest.mark.parametrize("rest", [{"anyOf": [{"properties": {"a": {}}}, {"properties": {"b": {}}}]},
                                  {"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}, {"not": {"required": ["a"]}}])
def test_unevaluated_beside_conditional_evaluation_stays_refused(rest):
    with pytest.raises(grammar.GrammarError, match="/unevaluatedProperties"):
        grammar.compile_json_schema({"type": "object", "unevaluatedProperties": False, **rest}, VOCAB)
