"""Schema-typed conversion of XML parameter text (fact sheet §3)."""
from __future__ import annotations

import json

import pytest

from parsing.xml_values import convert, escape, kind_of

INT, NUM, BOOL = {"type": "integer"}, {"type": "number"}, {"type": "boolean"}
OBJ, ARR, STR = {"type": "object"}, {"type": "array"}, {"type": "string"}

TABLE = [
    (STR, "03106", "03106"),
    (STR, "true", "true"),
    (STR, "null", "null"),
    (None, "12", "12"),
    ({"enum": ["a", "b"]}, "a", "a"),
    ({"enum": [1, 2]}, "2", 2),
    (INT, " 42 ", 42),
    (INT, "4.5", "4.5"),
    (INT, "twelve", "twelve"),
    (NUM, "2.0", 2),
    (NUM, "-1.5e2", -150),
    (NUM, "0.25", 0.25),
    (NUM, "nan", "nan"),
    (BOOL, "True", True),
    (BOOL, "false", False),
    (BOOL, "yes", "yes"),
    (OBJ, '{"a": 1}', {"a": 1}),
    (OBJ, "{'a': None}", {"a": None}),
    (OBJ, "[1]", "[1]"),
    (ARR, "(1, 2)", [1, 2]),
    (ARR, "{1, 2}", "{1, 2}"),
    (INT, "null", None),
    ({"type": ["integer", "null"]}, "None", None),
    ({"type": ["boolean", "string"]}, "false", False),
    ({"type": ["boolean", "string"]}, "maybe", "maybe"),
    ({"anyOf": [{"type": "null"}, {"type": "integer"}]}, "7", 7),
    ({"oneOf": [STR, INT]}, "7", 7),
    ({"type": "object", "properties": {}}, "not json", "not json"),
    ({"properties": {"a": STR}}, '{"a": "x"}', {"a": "x"}),
]


@pytest.mark.parametrize("schema,text,want", TABLE, ids=[f"{i}" for i in range(len(TABLE))])
def test_convert(schema, text, want) -> None:
    assert json.loads(convert(text, kind_of(schema))) == want


def test_only_plain_strings_stream() -> None:
    assert kind_of(STR).streamable and kind_of(None).streamable
    assert not kind_of({"type": ["string", "null"]}).streamable
    assert not kind_of(INT).streamable


def test_non_ascii_kept_raw() -> None:
    assert convert("東京", kind_of(STR)) == '"東京"'
    assert convert('{"c": "é"}', kind_of(OBJ)) == '{"c": "é"}'


@pytest.mark.parametrize("text", ["plain", 'q"uote', "back\\slash", "new\nline\t\x01", "東京 🌧️"])
def test_escape_concatenates(text: str) -> None:
    assert '"' + "".join(escape(c) for c in text) + '"' == json.dumps(text, ensure_ascii=False)
