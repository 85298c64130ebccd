"""`if`/`then`/`else` as an anyOf: (if and then) or (not if and else), for the conditions whose negation is exact.

Negated exactly: a set of types (not `integer` alone: "a number that is not an integer" has no
grammar here), one numeric bound, and an object condition made of `type: object`, `required`
names and properties whose values are string (or null/boolean) `const`/`enum`: its negation is
a union (not A and B = not A or not B) of "not an object" (only when the condition says
`type: object`: `properties` and `required` hold for every other type), "lacks a required name"
and "holds a property with another value". Any other condition raises a GrammarError naming
`if`: its negation cannot be stated exactly, and leaving it out would accept invalid instances.
`then`/`else` without `if` have no effect (JSON Schema) and are dropped.
"""

from __future__ import annotations

import json
from typing import Any

from grammar.errors import GrammarError
from grammar.frontends.json_merge import ANNOTATIONS, EXCLUDE_STRINGS, FORBID

ALL_TYPES = ("null", "boolean", "object", "array", "number", "string")
_FLIP = {"minimum": "exclusiveMaximum", "maximum": "exclusiveMinimum", "exclusiveMinimum": "maximum",
         "exclusiveMaximum": "minimum"}  # fmt: skip


def if_then_else(schema: dict[str, Any], where: str) -> dict[str, Any]:
    """`schema` with its conditional as an anyOf of allOfs (the rest of the schema first, so its
    properties keep their place)."""
    rest = {k: v for k, v in schema.items() if k not in ("if", "then", "else")}
    if "if" not in schema:
        return rest
    cond, then, other = schema["if"], schema.get("then", True), schema.get("else", True)
    negated = negate(cond, f"{where}/if")
    branches = [{"allOf": [rest, cond, then]}] + [{"allOf": [rest, n, other]} for n in negated]
    return {"anyOf": branches}


def hoist_condition(schema: dict[str, Any], where: str) -> dict[str, Any] | None:
    """`schema` (no `if` of its own) with the first `if`/`then`/`else` of an `allOf` part moved up
    to it (None when no part has one): allOf is a conjunction, so the part's condition holds of the
    whole instance as it did of the part. The condition's negation is checked first, where it was
    written, so a refusal names that part's pointer."""
    parts = schema.get("allOf")
    if "if" in schema or not isinstance(parts, list):
        return None
    for i, part in enumerate(parts):
        if isinstance(part, dict) and ("if" in part or "then" in part or "else" in part):
            if "if" in part:
                negate(part["if"], f"{where}/allOf/{i}/if")
                cond = {k: part[k] for k in ("if", "then", "else") if k in part}
            else:
                cond = {}  # then/else without if: annotations
            rest = {k: v for k, v in part.items() if k not in ("if", "then", "else")}
            return {**schema, "allOf": [*parts[:i], rest, *parts[i + 1:]], **cond}
    return None


def negate(cond: Any, where: str) -> list[Any]:
    """Schemas whose union is exactly the instances `cond` rejects; GrammarError when we have none."""
    if isinstance(cond, dict):
        cond = {k: v for k, v in cond.items() if k not in ANNOTATIONS}
    if cond is True or cond == {}:
        return []
    if cond is False:
        return [True]
    if not isinstance(cond, dict):
        raise GrammarError(f"{where}: a schema must be an object or a boolean")
    keys = set(cond)
    if keys == {"anyOf"} and isinstance(cond["anyOf"], list) and cond["anyOf"]:
        return _negate_any_of(cond["anyOf"], where)
    if keys == {"type"}:
        return _other_types(_types(cond["type"], where), where)
    if len(keys & set(_FLIP)) == 1 and keys <= set(_FLIP) | {"type"}:
        return _negate_bound(cond, where)
    if keys <= {"type", "properties", "required"}:
        return _negate_object(cond, where)
    if keys <= {"type", *_STRING_KEYS} and keys & set(_STRING_KEYS):
        return _negate_string(cond, where)
    if keys <= {"type", "const", "enum"} and keys & {"const", "enum"}:
        return _other_values(cond, where)["anyOf"]
    raise GrammarError(f"{where}: a condition whose negation cannot be stated exactly (only types, one numeric "
                       f"bound, string pattern/lengths, string/null/boolean const or enum, or object properties "
                       f"with such values or types)")  # fmt: skip


_STRING_KEYS = ("pattern", "minLength", "maxLength")
MAX_NEGATED_PRODUCT = 16  # schemas in the negation of an anyOf (a product of its branches' negations)


def _negate_any_of(branches: list[Any], where: str) -> list[Any]:
    """not (A or B) = not A and not B: the union of each choice of one schema from every
    branch's negation (their conjunction); the same branch twice once."""
    unique = list({json.dumps(b, sort_keys=True, default=str): b for b in branches}.values())
    out: list[Any] = [True]
    for i, branch in enumerate(unique):
        negations = negate(branch, f"{where}/anyOf/{i}")
        out = [n if o is True else {"allOf": [o, n]} for o in out for n in negations]
        if len(out) > MAX_NEGATED_PRODUCT:
            raise GrammarError(f"{where}: the negation of this anyOf has too many parts to state")
        if not out:
            return []
    return out


def _negate_string(cond: dict[str, Any], where: str) -> list[Any]:
    """The strings outside a pattern and lengths (the other types too when the condition names its
    type; without one, every non-string meets the condition). The strings left out are a superset
    of the condition's (json_text's EXCLUDE_STRINGS: the pattern as Python `re` may read it), so the
    negation holds a subset of its instances, never one the condition takes."""
    out: list[Any] = []
    if "type" in cond:
        types = _types(cond["type"], where)
        if types != {"string"}:
            raise GrammarError(f"{where}/type: a string condition on other types cannot be negated")
        out += _other_types(types, where)
    constraint = {k: cond[k] for k in _STRING_KEYS if k in cond}
    out.append({"type": "string", EXCLUDE_STRINGS: [constraint]})
    return out


def _types(declared: Any, where: str) -> set[str]:
    types = {declared} if isinstance(declared, str) else set(declared) if isinstance(declared, list) else None
    if types is None or not types <= set(ALL_TYPES) | {"integer"}:
        raise GrammarError(f"{where}/type: must be a type name or a list of them")
    return types


def _other_types(types: set[str], where: str) -> list[Any]:
    if "integer" in types and "number" not in types:
        raise GrammarError(f"{where}/type: the negation of 'integer' (a number with a fraction) is not supported")
    rest = [t for t in ALL_TYPES if t not in types]
    return [{"type": rest}] if rest else []


def _negate_bound(cond: dict[str, Any], where: str) -> list[Any]:
    (key,) = set(cond) & set(_FLIP)
    bound = cond[key]
    if isinstance(bound, bool) or not isinstance(bound, (int, float)):
        raise GrammarError(f"{where}/{key}: must be a number")
    out: list[Any] = [{"type": "number", _FLIP[key]: bound}]  # the numbers on the other side
    if "type" in cond:
        out += _other_types(_types(cond["type"], where), where)
    return out


def _negate_object(cond: dict[str, Any], where: str) -> list[Any]:
    props, required = cond.get("properties", {}), cond.get("required", [])
    if not isinstance(props, dict) or not isinstance(required, list):
        raise GrammarError(f"{where}: properties must be an object and required an array")
    out: list[Any] = []
    if "type" in cond:
        out += _other_types(_types(cond["type"], where), where)
    for name in required:
        out.append({"type": "object", FORBID: [name]})
    for name, sub in props.items():
        out.append({"type": "object", "properties": {name: _other_values(sub, f"{where}/properties/{name}")},
                    "required": [name]})  # fmt: skip
    return out


def _other_values(sub: Any, where: str) -> dict[str, Any]:
    """Every JSON value outside a `const`/`enum` of strings, nulls and booleans, or outside a set of
    types."""
    if isinstance(sub, dict) and set(sub) - ANNOTATIONS == {"type"}:
        return {"anyOf": _other_types(_types(sub["type"], where), where) or [False]}
    if not isinstance(sub, dict) or not set(sub) - ANNOTATIONS <= {"const", "enum", "type"} or not (
            "const" in sub or "enum" in sub):
        raise GrammarError(f"{where}: only types and const/enum values can be negated in a condition")
    values = [sub["const"]] if "const" in sub else sub["enum"]
    if not isinstance(values, list) or not all(v is None or isinstance(v, (str, bool)) for v in values):
        raise GrammarError(f"{where}: only string, boolean and null values can be negated in a condition")
    if "type" in sub:  # then every listed value must have one of its types: the condition is the list
        kinds = _types(sub["type"], where)
        if any(("null" if v is None else "boolean" if isinstance(v, bool) else "string") not in kinds for v in values):
            raise GrammarError(f"{where}: a const/enum value outside its own type cannot be negated in a condition")
    strings = [v for v in values if isinstance(v, str)]
    branches: list[Any] = [{"type": ["array", "object", "number"]}]
    branches.append({"type": "string", EXCLUDE_STRINGS: [{"enum": strings}]} if strings else {"type": "string"})
    if None not in values:
        branches.append({"type": "null"})
    branches += [{"const": b} for b in (True, False) if b not in values]
    return {"anyOf": branches}
