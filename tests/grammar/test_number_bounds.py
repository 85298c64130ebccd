"""Numbers under decimal bounds and exponents under bounds (issue 39): exact, against jsonschema's verdict."""

from __future__ import annotations

import json
import random

import jsonschema
import pytest

import grammar
from tests.grammar.conftest import byte_vocab
from tests.grammar.helpers import accepts_text

VOCAB = byte_vocab()


@pytest.mark.parametrize("schema, good, bad", [
    ({"type": "number", "minimum": 0.1}, ["0.1", "0.10", "0.11", "1", "1e-1", "2.5E+3"], ["0.09", "0", "9e-2", "-0.1"]),
    ({"type": "number", "minimum": 0.1, "maximum": 0.9}, ["0.1", "0.5", "0.9", "0.90", "5e-1"], ["0.91", "1", "0.0999"]),
    ({"type": "number", "minimum": 0, "maximum": 0.5}, ["0", "0.5", "0.25", "1e-06", "5E-1"], ["0.51", "1", "6e-1"]),
    ({"type": "number", "minimum": 0, "maximum": 1}, ["1e-06", "1e-6", "1E-06", "1e+0", "1.0e0", "0.000001"],
     ["1.1e0", "2e-0", "1e1", "-1e-6"]),
    ({"type": "number", "exclusiveMinimum": 0.1, "exclusiveMaximum": 0.3}, ["0.2", "0.11", "0.2999", "2e-1"],
     ["0.1", "0.3", "0.10", "3e-1", "0.10000000000000000001"]),
    ({"type": "number", "exclusiveMinimum": 0, "maximum": 100}, ["1e-300", "100", "1e2", "99.9"], ["1e-400", "0", "1e3"]),
    ({"type": "number", "minimum": -1.5, "maximum": -0.25}, ["-1.5", "-0.25", "-1", "-2.5e-1", "-1.5e0"],
     ["-0.2", "-1.6", "0", "-2e-1"]),
    ({"type": "number", "minimum": 1.5, "maximum": 7.25}, ["1.5", "7.25", "3", "7", "2e0"], ["7.26", "1.49", "8"]),
    ({"type": "number", "minimum": 0.05, "multipleOf": 0.01}, ["0.05", "0.1", "12.34"], ["0.04", "0.051", "1e-1"]),
    ({"type": "number", "minimum": 1e-06}, ["1e-06", "0.000001", "2e-6", "1"], ["9e-7", "0.0000009"]),
])  # fmt: skip
def test_decimal_bounds_and_exponents(schema: dict, good: list[str], bad: list[str]) -> None:
    g = grammar.compile_json_schema(schema, VOCAB)
    for text in good:
        assert accepts_text(g, text), text
    for text in bad:
        assert not accepts_text(g, text), text


def _normalized(text: str) -> bool:
    """Fixed point, or an exponent form with one nonzero digit before the point (what we accept)."""
    body = text.lstrip("-")
    return "e" not in body.lower() or (body[0] in "123456789" and body[1] in ".eE")


def test_bounds_agree_with_jsonschema() -> None:
    """Random bounds (inclusive, exclusive, fractional, negative) and texts: never an invalid text
    accepted; every valid one of the shapes we take accepted."""
    rng = random.Random(39)
    bounds = [0, 0.1, 0.3, 1, 1.5, 2, 10, 100, -0.1, -1, 0.05, 0.25, 9.99, 1e-06, -1e-06, 2.5e3]
    texts = ["0", "0.1", "0.10", "0.09", "0.11", "1", "1.0", "1e-06", "1E-6", "5e-1", "1.5e+2", "150", "0.05", "2",
             "9.99", "10", "1e1", "1e01", "-0.1", "-1", "-1e-06", "-5e-1", "0.000001", "1e-7", "100", "1e2", "99.99",
             "0.3", "0.2999", "0.30001", "2.5E-1", "9.9e-1", "2500", "2.5e3", "2.5e+03", "-0", "0.0", "1e-400",
             "0.10000000000000000001", "0.09999999999999999999", "12e3", "0e1"]  # fmt: skip
    for _ in range(250):
        schema: dict = {"type": "number"}
        lo, hi = rng.choice(bounds + [None]), rng.choice(bounds + [None])
        if lo is not None:
            schema["exclusiveMinimum" if rng.random() < 0.3 else "minimum"] = lo
        if hi is not None:
            schema["exclusiveMaximum" if rng.random() < 0.3 else "maximum"] = hi
        try:
            g = grammar.compile_json_schema(schema, VOCAB)
        except grammar.GrammarError:  # empty ranges
            assert not any(jsonschema.Draft202012Validator(schema).is_valid(json.loads(t)) for t in texts), schema
            continue
        check = jsonschema.Draft202012Validator(schema)
        for text in texts:
            valid, accepted = check.is_valid(json.loads(text)), accepts_text(g, text)
            assert valid or not accepted, (schema, text)
            if valid and _normalized(text) and float(text) != 0 and len(text) < 20:
                assert accepted, (schema, text)
