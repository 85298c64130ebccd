"""Drafts 3-7: `$ref` hides its siblings (issue 39, fifth pass). A document naming such a draft
compiles as its validator reads it; without `$schema` (2020-12) the siblings still hold. Texts fed
byte by byte, checked with the validator jsonschema picks for the document."""

from __future__ import annotations

import json

import jsonschema
import pytest

import grammar
from grammar.frontends.json_drafts import as_validated
from tests.grammar.conftest import byte_vocab
from tests.grammar.helpers import accepts_text

VOCAB = byte_vocab()

BODY = {"definitions": {"p": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}},
        "type": "object", "properties": {"s": {"$ref": "#/definitions/p", "enum": ["key", "sas"], "description": "d"}}}  # fmt: skip


def _check(schema, good, bad):
    g = grammar.compile_json_schema(schema, VOCAB)
    validator = jsonschema.validators.validator_for(schema)(schema)
    for text in good:
        validator.validate(json.loads(text))
        assert accepts_text(g, text), text
    for text in bad:
        assert not validator.is_valid(json.loads(text)), text
        assert not accepts_text(g, text), text


@pytest.mark.parametrize("draft", ["http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-04/schema#",
                                   "http://json-schema.org/draft-06/schema"])
def test_ref_hides_siblings_in_old_drafts(draft):
    _check({"$schema": draft, **BODY}, ['{"s":{"key":"k"}}', "{}"], ['{"s":"key"}', '{"s":{}}', '{"s":{"key":1}}'])


def test_ref_and_siblings_both_hold_in_2020_12():
    _check(BODY, ["{}"], ['{"s":{"key":"k"}}', '{"s":"key"}'])
    _check({"$schema": "https://json-schema.org/draft/2020-12/schema", **BODY}, ["{}"], ['{"s":{"key":"k"}}'])


def test_root_ref_keeps_its_definitions():
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "$ref": "#/definitions/p", "type": "string",
              "definitions": {"p": {"type": "integer"}}}  # fmt: skip
    _check(schema, ["1", "-2"], ['"a"', "1.5"])


def test_pointer_into_a_dropped_keyword_leaves_the_document():
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"q": {"type": "string"}},
              "properties": {"a": {"$ref": "#/definitions/q", "properties": {"x": {"type": "integer"}}},
                             "b": {"$ref": "#/properties/a/properties/x"}}}  # fmt: skip
    assert as_validated(schema) is schema
    assert as_validated(BODY) is BODY  # no $schema: nothing to change
