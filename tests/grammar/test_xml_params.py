"""Tool-call arguments as XML-style parameters inside structural tags."""

from __future__ import annotations

import pytest

import grammar
from tests.grammar.conftest import byte_vocab
from tests.grammar.helpers import accepts_text

VOCAB = byte_vocab()
SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer", "minimum": 1},
        "unit": {"type": "string", "enum": ["C", "F"]},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["city", "days"],
}
PARAMS = {"begin": "<parameter={key}>\n", "end": "\n</parameter>\n"}
SPEC = {"alternatives": [{"begin": "<function=weather>\n", "schema": SCHEMA, "end": "</function>", "xml_params": PARAMS}]}


def _call(*params: tuple[str, str]) -> str:
    return "<function=weather>\n" + "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params) + "</function>"


@pytest.mark.parametrize(
    "text, ok",
    [
        (_call(("city", "Paris"), ("days", "3")), True),
        (_call(("city", "New\nYork <b>"), ("days", "3"), ("unit", "F"), ("tags", '["a","b"]')), True),
        (_call(("city", ""), ("days", "1")), True),
        (_call(("city", "Paris")), False),  # days is required
        (_call(("days", "3"), ("city", "Paris")), False),  # declared order
        (_call(("city", "Paris"), ("days", "0")), False),  # minimum
        (_call(("city", "Paris"), ("days", "three")), False),
        (_call(("city", "Paris"), ("days", "3"), ("unit", "K")), False),
        (_call(("city", "Paris"), ("days", "3"), ("tags", "[1]")), False),
        (_call(("city", "a\n</parameter>\nb"), ("days", "3")), False),  # the closing string ends the value
        (_call(("city", "Paris"), ("days", "3"), ("other", "x")), False),
    ],
)
def test_xml_parameters_language(text, ok):
    g = grammar.compile_structural_tag(SPEC, VOCAB)
    assert accepts_text(g, text) == ok


def test_dsml_string_attribute_says_how_the_value_is_written():
    params = {"begin": '<p name="{key}" string="{string}">', "end": "</p>"}
    spec = {"alternatives": [{"begin": "<f>", "schema": SCHEMA, "end": "</f>", "xml_params": params}]}
    g = grammar.compile_structural_tag(spec, VOCAB)
    assert accepts_text(g, '<f><p name="city" string="true">Paris</p><p name="days" string="false">3</p></f>')
    assert not accepts_text(g, '<f><p name="city" string="false">Paris</p><p name="days" string="false">3</p></f>')


@pytest.mark.parametrize(
    "schema, fragment",
    [
        ({"type": "object", "properties": {"a": {"type": ["string", "integer"]}}}, "/properties/a"),
        ({"type": "object", "properties": {"a": {"type": "string", "maxLength": 3}}}, "/properties/a/maxLength"),
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}, "$defs": {"x": {"type": "integer"}}}, "/properties/a"),
        ({"type": "object", "properties": {"a": {}}, "minProperties": 1}, "minProperties"),
        ({"type": "array"}, "object schema"),
    ],
)
def test_unsupported_xml_parameter_schemas_raise(schema, fragment):
    spec = {"alternatives": [{"begin": "<f>", "schema": schema, "end": "</f>", "xml_params": PARAMS}]}
    with pytest.raises(grammar.GrammarError) as info:
        grammar.compile_structural_tag(spec, VOCAB)
    assert fragment in str(info.value)
