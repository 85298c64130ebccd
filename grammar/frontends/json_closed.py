"""Strict mode's closed objects and tuples: which schemas it closes, and a closed copy for value checks.

JSON Schema leaves an object open to any other property unless `additionalProperties` says
otherwise, and a `prefixItems` tuple open to any further items unless `items` does. Strict mode
(xgrammar's default in vLLM, OpenAI's `strict: true`) closes them: an object schema that names
its properties and says nothing of `additionalProperties` admits only those, and a tuple without
`items` admits nothing past its prefix. A schema that names no property (`{"type": "object"}`)
or no prefix (`{"type": "array"}`) stays free-form. The compiler applies this to each object and
array schema after `$ref`/`allOf` merging, so the properties of all parts count as declared.
"""

from __future__ import annotations

from typing import Any

_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_VALUES = ("additionalProperties", "additionalItems", "items", "not", "if", "then", "else", "contains",
                  "propertyNames")  # fmt: skip


def names_members(schema: dict[str, Any]) -> bool:
    """True when an object schema names the properties it admits (closed in strict mode)."""
    return "properties" in schema or "patternProperties" in schema or bool(schema.get("required"))


def closes_object(schema: dict[str, Any], strict: bool) -> bool:
    """True when strict mode closes this object schema (no `additionalProperties` of its own)."""
    return strict and "additionalProperties" not in schema and names_members(schema)


def closes_tuple(schema: dict[str, Any], strict: bool) -> bool:
    """True when strict mode admits nothing past this array schema's prefix items."""
    if not strict:
        return False
    if isinstance(schema.get("items"), list):  # draft 4-7 tuple form
        return "additionalItems" not in schema
    return "prefixItems" in schema and "items" not in schema


def closed_copy(schema: Any) -> Any:
    """`schema` with every object and tuple strict mode closes closed explicitly, for a JSON
    Schema validator (enum and const values are checked with one). Each subschema is closed on
    its own: an `allOf` of property sets then admits less than the compiler does (which closes
    after merging), so a value may be dropped but never wrongly kept."""
    if isinstance(schema, list):
        return [closed_copy(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    for key in _SCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {name: closed_copy(sub) for name, sub in out[key].items()}
    for key in _SCHEMA_LISTS + _SCHEMA_VALUES:
        if key in out:
            out[key] = closed_copy(out[key])
    if closes_object(schema, True):
        out["additionalProperties"] = False
    if closes_tuple(schema, True):
        out["additionalItems" if isinstance(schema.get("items"), list) else "items"] = False
    return out
