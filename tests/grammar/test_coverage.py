"""Keyword combinations compiled exactly (issue 17): every text is accepted exactly when jsonschema says
the instance is valid (declared properties written first, in order, then the others)."""

from __future__ import annotations

import itertools
import json

import jsonschema
import pytest

import grammar
from grammar.frontends.regular import intersect, minus, to_dfa, to_node
from grammar.ir import NOTHING, Repeat, lit
from tests.grammar.conftest import byte_vocab
from tests.grammar.helpers import accepts_text

VOCAB = byte_vocab()


def _agree(schema: dict, texts: list[str], min_accepted: int = 1, exact: bool = True) -> None:
    """Each text is accepted exactly when valid (`exact`), or at least only when valid (formats:
    ours are stricter than jsonschema's format checks)."""
    g = grammar.compile_json_schema(schema, VOCAB)
    validator = jsonschema.validators.validator_for(schema)(schema, format_checker=jsonschema.FormatChecker())
    accepted = 0
    for text in texts:
        valid = validator.is_valid(json.loads(text))
        got = accepts_text(g, text)
        assert got == valid if exact else (valid or not got), (text, valid)
        accepted += got
    assert accepted >= min_accepted


STRINGS = ['""', '"a"', '"ab"', '"abc"', '"abcd"', '"ab1"', '"é"', '"éa"', '"aé"', '"\\n"', '"a\\nb"', '"2024-01-31"',
           '"2023-01-31"', '"2024-13-01"', '"a@b.cc"', '"abcdef@ghi.jk"', '"x/y"', '"x\\/y"']


@pytest.mark.parametrize("schema", [
    {"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 3},
    {"type": "string", "pattern": "[a-zé]", "maxLength": 2},
    {"type": "string", "pattern": "b", "minLength": 3},
    {"type": "string", "format": "email", "maxLength": 12},
    {"type": "string", "format": "date", "pattern": "^2024"},
    {"type": "string", "format": "date", "pattern": "-01-", "maxLength": 10},
    {"type": "string", "pattern": "/", "minLength": 3, "maxLength": 4},
])
def test_pattern_format_and_length_intersect(schema):
    _agree(schema, STRINGS, exact="format" not in schema)


def test_lengths_out_of_order_admit_no_string():
    g = grammar.compile_json_schema({"anyOf": [{"type": "string", "minLength": 3, "maxLength": 2}, {"type": "null"}]}, VOCAB)
    assert accepts_text(g, "null") and not accepts_text(g, '"abc"')


@pytest.mark.parametrize("pattern", [
    "^a|b$", "^$|(^(?:\\S+\\s+){0,3}\\S+$)", "(^x|y)z", "^\\{[A-F0-9]{2}\\}$|^[a-z]*@[a-z]+$", "a^b", "x$|^y",
])
def test_anchors_inside_patterns(pattern):
    texts = ['""', '"a"', '"ax"', '"xa"', '"b"', '"xb"', '"bx"', '"xz"', '"yz"', '"ayz"', '"axz"', '"a b"', '"a b "',
             '" a"', '"{AB}"', '"{AB}x"', '"x@y"', '"@y"', '"ab"', '"x"', '"y"', '"yx"', '"ax"']
    _agree({"type": "string", "pattern": pattern}, texts, min_accepted=0)


def _objects(declared: list[str], others: list[str], values: list[str]) -> list[str]:
    """Every object of up to two declared names (in order) then up to two other names, over `values`."""
    out = []
    for k in range(3):
        for names in itertools.combinations(declared, min(k, len(declared))):
            for j in range(3):
                for extra in itertools.permutations([o for o in others if o not in declared], j):
                    for vals in itertools.product(values, repeat=len(names) + len(extra)):
                        members = [f'"{n}":{v}' for n, v in zip(list(names) + list(extra), vals)]
                        out.append("{" + ",".join(members) + "}")
    return sorted(set(out))


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"id": {"type": "integer"}}, "patternProperties": {"^x-": {"type": "string"}}},
    {"type": "object", "properties": {"id": {"type": "integer"}}, "patternProperties": {"^x-": {"type": "string"}},
     "additionalProperties": {"type": "boolean"}},
    {"type": "object", "patternProperties": {"^x": {"type": "integer"}, "y$": {"type": "string"}}},
    {"type": "object", "patternProperties": {"^x": {"type": "integer"}, "y$": {"type": "integer", "minimum": 2}},
     "additionalProperties": False},
    {"type": "object", "properties": {"xid": {"type": "number"}}, "patternProperties": {"^x": {"type": "integer"}},
     "additionalProperties": False},
    {"type": "object", "properties": {"xid": {}}, "required": ["xid"],
     "patternProperties": {"id$": {"type": "integer", "minimum": 2}}},
    {"type": "object", "required": ["x-a"], "patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": False},
])
def test_pattern_properties_beside_other_keywords(schema):
    declared = list(schema.get("properties", {})) + [r for r in schema.get("required", []) if r not in schema.get("properties", {})]
    _agree(schema, _objects(declared, ["x-a", "xy", "zy", "q", "x"], ["1", "3", '"s"', "true", "1.5"]))


def test_regular_languages_intersect_and_subtract():
    a = to_dfa(Repeat(lit("ab"), 0, None))  # (ab)*
    b = to_dfa(Repeat(lit("ab"), 0, 2))  # at most two
    assert [s for s in (b"", b"ab", b"abab", b"ababab") if intersect(a, b).accepts(s)] == [b"", b"ab", b"abab"]
    assert [s for s in (b"", b"ab", b"ababab") if minus(a, b).accepts(s)] == [b"ababab"]
    assert to_node(minus(b, a)) == NOTHING and minus(b, a).is_empty()


ONE_OF_TEXTS = ['null', 'true', '0', '1', '2.5', '-3', '"a"', '"ab"', '"APPROVER"', '"x SIGNER"', '"http://x"', '"./y"',
                '"0123456789abcdef01234567"', '[]', '[1]', '[[1]]', '[1,[2]]', '{}', '{"id":"1","win":{}}',
                '{"id":"1","lose":{}}', '{"id":"1","win":{},"lose":{}}', '{"except":[]}', '{"only":[]}',
                '{"except":[],"only":[]}', '{"country":"BRA","state":"AC"}', '{"country":"USA","state":"AC"}',
                '{"state":"AC"}', '{"kind":"a","n":1}', '{"kind":"b","n":1}', '{"n":1}', 'false']


@pytest.mark.parametrize("schema", [
    {"type": "string", "oneOf": [{"pattern": "APPROVER"}, {"pattern": "SIGNER"}]},
    {"oneOf": [{"type": "string", "pattern": "^https?://.+$"}, {"type": "string", "pattern": "^\\./.+$"}]},
    {"oneOf": [{"type": "string", "pattern": "^[A-Fa-f\\d]{24}$"}, {"type": "string"}]},
    {"oneOf": [{"type": "array", "items": {"type": "number"}}, {"type": "array", "items": {"type": "array"}}]},
    {"type": "object", "oneOf": [{"required": ["id", "win"], "properties": {"id": {"type": "string"}}},
                                 {"required": ["id", "lose"], "properties": {"id": {"type": "string"}}}]},
    {"type": "object", "oneOf": [{"properties": {"country": {"enum": ["BRA"]}, "state": {"type": "string"}}},
                                 {"properties": {"country": {"enum": ["USA"]}, "state": {"type": "string"}}}]},
    {"oneOf": [{"type": "object", "properties": {"kind": {"const": "a"}}, "required": ["kind"]},
               {"type": "boolean", "enum": [False]},
               {"properties": {"n": {"type": "integer"}}}]},
    {"oneOf": [{"type": "integer", "maximum": 0}, {"type": "number", "minimum": 1}, {"enum": [0, 1, "a"]}]},
    {"oneOf": [{"type": "string"}, {"const": "a"}, {"type": ["string", "null"], "minLength": 2}]},
])
def test_overlapping_one_of_is_narrowed_never_widened(schema):
    """Every accepted instance is valid under oneOf (exactly one branch); the cases above keep
    at least one instance each."""
    _agree(schema, ONE_OF_TEXTS, exact=False)


@pytest.mark.parametrize(("lo", "hi"), [(0, 40_000), (3000, 5000), (2000, None), (1100, 1100)])
def test_long_strings_compile_compact(lo, hi):
    """A grammar past the inline size calls its long repeats in blocks (grammar/automaton/nfa.py
    _split): a few thousand automaton states for a maxLength of 40,000, the lengths exact."""
    schema = {"type": "object", "properties": {"s": {"type": "string", "minLength": lo, **({"maxLength": hi} if hi else {})},
                                               "t": {"type": "string", "maxLength": 3}}}  # fmt: skip
    g = grammar.compile_json_schema(schema, VOCAB)
    assert len(g.nfa.eps) < 60_000  # (inlined below the compact threshold)
    top = hi if hi is not None else lo + 50
    for n in sorted({max(lo - 1, 0), lo, lo + 1, top - 1, top, top + 1}):
        text = '{"s":"' + "é" * n + '","t":"abc"}'
        assert accepts_text(g, text) == (lo <= n and (hi is None or n <= hi)), n
    assert not accepts_text(g, '{"s":"' + "a" * lo + '","t":"abcd"}')


@pytest.mark.parametrize("schema", [
    {"oneOf": [{"anyOf": [{"type": "string", "pattern": "^a"}, {"type": "string", "pattern": "^b"}]},
               {"type": "object"}, {"type": "string", "pattern": "c$"}]},
    {"oneOf": [{"type": "array", "items": {"type": "integer"}}, {"anyOf": [{"type": "integer"}, {"type": "array"}]}]},
    {"oneOf": [{"type": "string", "not": {"type": "integer"}}, {"type": ["string", "null"], "maxLength": 1}]},
])
def test_one_of_with_an_any_of_inside(schema):
    texts = ONE_OF_TEXTS + ['"ac"', '"bc"', '"bd"', '"c"', '"ab"', '[1,2]', '["x"]', "7"]
    _agree(schema, texts, exact=False)


def test_declared_properties_are_written_in_declared_order():
    """Decided (issue 17), widened by measurement (issue 39): declared properties are generated, and
    so accepted, in declared order, as OpenAI's structured outputs promise and xgrammar and
    llguidance do; since issue 39 the default also takes an object with its required members first,
    in `required`'s order (grammar/frontends/json_order.py). So
    JSONSchemaBench Github_ultra---o33032's valid instance, which writes `template` before
    `linkedGenes` (declared the other way round), is taken now. A declared name is never taken as an
    additional property either (that would let it repeat, or skip its own schema)."""
    schema = {"type": "object", "properties": {"linkedGenes": {"type": "object"}, "template": {"enum": ["EggGame"]}},
              "required": ["template"]}
    g = grammar.compile_json_schema(schema, VOCAB)
    assert accepts_text(g, '{"linkedGenes":{},"template":"EggGame"}')
    assert accepts_text(g, '{"template":"EggGame"}')
    assert accepts_text(g, '{"template":"EggGame","other":1}')
    assert accepts_text(g, '{"template":"EggGame","linkedGenes":{}}')
    assert not accepts_text(g, '{"template":"EggGame","template":"EggGame"}')
    assert not accepts_text(g, '{"template":"EggGame","linkedGenes":{},"linkedGenes":{}}')
    assert not accepts_text(g, '{"linkedGenes":{}}')
    large = {"type": "object", "properties": {k: {"type": "integer"} for k in "abcdef"}, "required": ["f"]}
    g = grammar.compile_json_schema(large, VOCAB)
    assert accepts_text(g, '{"a":1,"c":1,"f":1}') and accepts_text(g, '{"f":1,"a":1,"c":1}')
    assert not accepts_text(g, '{"c":1,"a":1,"f":1}')
