"""String languages that were too large to build (issue 39, fifth pass): the names no counted
`patternProperties` pattern matches, by a widened pattern subtracted (fewer extra names, never an
invalid one). Each valid text is fed byte by byte and checked with jsonschema; each invalid one
must be refused."""

from __future__ import annotations

import json

import jsonschema
import pytest

import grammar
from tests.grammar.conftest import byte_vocab
from tests.grammar.helpers import accepts_text

VOCAB = byte_vocab()

COUNTED_PATTERN = {"type": "object", "properties": {"costs": {
    "type": "object", "additionalProperties": {"type": "integer"},
    "patternProperties": {"^[/][/.\\w-]{0,254}$": {"type": "array", "items": {"type": "number"}}}}}}  # fmt: skip


@pytest.mark.parametrize("whitespace", ["compact", "flexible"])
def test_names_outside_a_counted_pattern(whitespace):
    g = grammar.compile_json_schema(COUNTED_PATTERN, VOCAB, whitespace=whitespace)
    validator = jsonschema.Draft7Validator(COUNTED_PATTERN)
    good = ['{"costs":{"/a/b.c":[1.5]}}', '{"costs":{"x":1,"/p":[]}}', '{"costs":{"a/b":2}}', '{"costs":{}}']
    bad = ['{"costs":{"/a":1}}', '{"costs":{"x":[1]}}', '{"costs":{"/a b":[1]}}']
    for text in good:
        validator.validate(json.loads(text))
        assert accepts_text(g, text), text
    for text in bad:
        assert not validator.is_valid(json.loads(text)), text
        assert not accepts_text(g, text), text
    # the widened pattern's price: a name the pattern's 254 characters cannot take is valid as an
    # extra member, but not written (a subset of the valid objects)
    long_name = json.dumps({"costs": {"/" + "a" * 260: 1}}, separators=(",", ":"))
    assert validator.is_valid(json.loads(long_name))
    assert not accepts_text(g, long_name)


PATTERN_CASES = [
    # each alternative anchored at its own ends: no marker automaton, and no count to intersect
    ({"type": "string", "minLength": 0, "pattern": "^$|(^(?:\\S+\\s+){0,3}\\S+$)"},
     ["", "a", "a b", "a b c d"], [" a", "a ", "a b c d e", "a  b\t"]),
    ({"type": "string", "pattern": "^ab|cd$"}, ["ab", "abx", "xcd", "cd"], ["xab", "cdx", "a"]),
    ({"type": "string", "pattern": "(^a$|b)"}, ["a", "b", "xbx"], ["aa", "x", ""]),
    # minLength 1 beside a pattern that takes no empty string is the pattern alone
    ({"type": "string", "minLength": 1, "pattern": "^(?:\\S+\\s+){0,199}\\S+$"}, ["a", "a b"], ["", " ", "a "]),
    ({"type": "string", "minLength": 1, "pattern": "^[a-z]*$"}, ["a", "abc"], ["", "A"]),
]


@pytest.mark.parametrize("schema, good, bad", PATTERN_CASES, ids=["anchored-alternatives", "anchor-each-end",
                                                                   "group", "min1-word-count", "min1-nullable"])
def test_patterns_exact(schema, good, bad):
    g = grammar.compile_json_schema(schema, VOCAB)
    validator = jsonschema.Draft7Validator(schema)
    for text in good:
        validator.validate(text)
        assert accepts_text(g, json.dumps(text)), text
    for text in bad:
        assert not validator.is_valid(text), text
        assert not accepts_text(g, json.dumps(text)), text
