"""`uniqueItems` over items of a few values (issue 39, fifth pass): a state per set of values
written, exact; other items stay refused, naming the keyword. Each valid text is fed byte by byte
and checked with jsonschema; each invalid one must be refused."""

from __future__ import annotations

import json

import jsonschema
import pytest

import grammar
from tests.grammar.conftest import byte_vocab
from tests.grammar.helpers import accepts_text

VOCAB = byte_vocab()

METHODS = {"type": "array", "minItems": 1, "uniqueItems": True, "items": {"$ref": "#/definitions/method"},
           "definitions": {"method": {"enum": ["GET", "POST", "PUT"]}}}  # fmt: skip
CASES = [
    (METHODS, ['["GET"]', '["PUT","GET"]', '["POST","PUT","GET"]'],
     ["[]", '["GET","GET"]', '["GET","POST","GET"]', '["HEAD"]']),
    ({"type": "array", "uniqueItems": True, "maxItems": 2, "items": {"type": "boolean"}},
     ["[]", "[true]", "[false,true]"], ["[true,true]", "[false,false]", "[null]"]),
    ({"type": "array", "uniqueItems": True, "items": {"enum": [1.0, 2, "1"]}},
     ['[2,1.0]', '[1,"1"]', '["1",2,1]'], ['[1,1.0]', '[1.0,2,1]', '["1","1"]', "[3]"]),
    ({"type": "array", "uniqueItems": True, "minItems": 2,
      "items": {"anyOf": [{"enum": ["a", "b"]}, {"const": "b"}, {"type": "null"}]}},
     ['["b","a"]', '[null,"b","a"]'], ['["a"]', '["b","b"]', '[null,null]', '["c","a"]']),
    ({"type": "array", "uniqueItems": True, "items": {"enum": ["x", "y", 3], "type": "string"}},
     ['["y","x"]', "[]"], ['["x","x"]', "[3]"]),
]


@pytest.mark.parametrize("schema, good, bad", CASES, ids=["ref-enum", "booleans", "numbers-equal", "anyOf", "enum-typed"])
@pytest.mark.parametrize("whitespace", ["compact", "flexible"])
def test_unique_items_exact(schema, good, bad, whitespace):
    g = grammar.compile_json_schema(schema, VOCAB, whitespace=whitespace)
    for text in good:
        jsonschema.Draft7Validator(schema).validate(json.loads(text))
        assert accepts_text(g, text), text
    for text in bad:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.Draft7Validator(schema).validate(json.loads(text))
        assert not accepts_text(g, text), text


def test_flexible_whitespace_inside():
    g = grammar.compile_json_schema(METHODS, VOCAB, whitespace="flexible")
    assert accepts_text(g, '[ "GET" ,\n "PUT" ]')
    assert not accepts_text(g, '[ "GET" , "GET" ]')


@pytest.mark.parametrize("items", [{"type": "string"}, {"type": "object"}, {"enum": [f"v{i}" for i in range(13)]}, True])
def test_other_items_stay_refused(items):
    schema = {"type": "array", "uniqueItems": True, "items": items}
    with pytest.raises(grammar.GrammarError, match="/uniqueItems"):
        grammar.compile_json_schema(schema, VOCAB)
    with pytest.raises(grammar.GrammarError, match="/uniqueItems"):
        grammar.compile_json_schema({"type": "object", "properties": {"tags": schema}}, VOCAB)
    assert grammar.compile_json_schema({**schema, "maxItems": 1}, VOCAB) is not None
