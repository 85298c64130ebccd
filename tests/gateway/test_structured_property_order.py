"""--structured-outputs-property-order: from the CLI through the engine config to the schema compile."""

from __future__ import annotations

import json

import grammar
from engine.structured import StructuredOutputs, compile_spec
from gateway.cli import _engine_config, build_parser
from schemas.engine import JsonSchemaSpec

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
          "required": ["city", "days"]}  # fmt: skip
BYTES = grammar.Vocabulary([bytes([b]) for b in range(256)], [0], 256)
SWAPPED = '{"days":3,"city":"Paris"}'


def _accepts(compiled, text: str) -> bool:
    m = compiled.matcher()
    return all(m.accept(b) for b in text.encode()) and m.accept(0)


def test_flag_reaches_the_engine_config():
    assert _engine_config(build_parser().parse_args(["serve"])).structured_outputs_property_order == "declared"
    args = build_parser().parse_args(["serve", "--structured-outputs-property-order", "any"])
    assert _engine_config(args).structured_outputs_property_order == "any"


def test_compile_spec_follows_the_policy():
    spec = JsonSchemaSpec(json_schema=json.dumps(SCHEMA))
    assert not _accepts(compile_spec(spec, BYTES), SWAPPED)
    assert _accepts(compile_spec(spec, BYTES, None, False, "any"), SWAPPED)
    assert _accepts(compile_spec(spec, BYTES, None, False, "any"), '{"city":"Paris","days":3}')


def test_structured_outputs_keeps_the_policy():
    outputs = StructuredOutputs("unused", 256, [0], 5.0, property_order="any")
    outputs._vocab = BYTES  # no tokenizer folder in this test
    outputs.check(JsonSchemaSpec(json_schema=json.dumps(SCHEMA)))
    assert outputs._property_order == "any"
