"""JSON Schema keyword bookkeeping: supported/annotation sets, $ref pointers, allOf merging, oneOf checks."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from grammar.ir import GrammarError

ANNOTATIONS = frozenset({
    "title", "description", "default", "examples", "example", "$schema", "$id", "id", "$comment",
    "deprecated", "readOnly", "writeOnly", "$defs", "definitions", "contentMediaType",
    "contentEncoding", "$anchor", "discriminator", "markdownDescription", "xml", "externalDocs",
})
SUPPORTED = frozenset({
    "type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "properties", "required",
    "additionalProperties", "items", "prefixItems", "additionalItems", "minItems", "maxItems",
    "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "nullable", "uniqueItems", "minProperties", "maxProperties",
})
UNSUPPORTED = frozenset({
    "not", "if", "then", "else", "dependencies", "dependentRequired", "dependentSchemas",
    "patternProperties", "propertyNames", "contains", "minContains", "maxContains",
    "unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef", "$dynamicAnchor",
    "$recursiveAnchor",
})
_MIN_KEYS = ("minimum", "minLength", "minItems", "minProperties")
_MAX_KEYS = ("maximum", "maxLength", "maxItems", "maxProperties")
MAX_MERGE_DEPTH = 32


def check_keywords(schema: dict[str, Any], where: str) -> None:
    """Raise for a validation keyword we cannot enforce (never ignore one silently)."""
    for key in schema:
        if key in UNSUPPORTED:
            raise GrammarError(f"{where}/{key}: keyword {key!r} is not supported")
    if schema.get("uniqueItems") is True and not (isinstance(schema.get("maxItems"), int) and schema["maxItems"] <= 1):
        raise GrammarError(f"{where}/uniqueItems: keyword 'uniqueItems' is not supported")


def resolve_pointer(root: Any, pointer: str, where: str) -> Any:
    """The subschema at a JSON pointer ('' = root) of the document."""
    cur = root
    if pointer in ("", "/"):
        return root
    if not pointer.startswith("/"):
        raise GrammarError(f"{where}/$ref: unsupported reference '#{pointer}'")
    for raw in pointer[1:].split("/"):
        part = unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            raise GrammarError(f"{where}/$ref: '#{pointer}' does not resolve")
    return cur


def _expand(root: Any, schema: Any, where: str, depth: int) -> list[Any]:
    """`schema` as a list of $ref-free, allOf-free parts (still may hold anyOf/oneOf)."""
    if depth > MAX_MERGE_DEPTH:
        raise GrammarError(f"{where}/allOf: recursive $ref inside allOf is not supported")
    if schema is True or schema == {}:
        return []
    if not isinstance(schema, dict):
        if schema is False:
            return [False]
        raise GrammarError(f"{where}: a schema must be an object or a boolean")
    check_keywords(schema, where)
    parts: list[Any] = []
    rest = {k: v for k, v in schema.items() if k not in ("$ref", "allOf")}
    if "$ref" in schema:
        ref = schema["$ref"]
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise GrammarError(f"{where}/$ref: only local references are supported, got {ref!r}")
        parts += _expand(root, resolve_pointer(root, ref[1:], where), ref[1:], depth + 1)
    for i, sub in enumerate(schema.get("allOf", [])):
        parts += _expand(root, sub, f"{where}/allOf/{i}", depth + 1)
    return parts + [rest]


def merge_all(root: Any, schema: dict[str, Any], where: str) -> Any:
    """Merge `$ref` and `allOf` parts into one schema (objects: properties and required united)."""
    parts = _expand(root, schema, where, 0)
    if any(p is False for p in parts):
        return False
    out: dict[str, Any] = {}
    for part in parts:
        out = _merge_two(out, part, where)
    return out


def _merge_two(a: dict[str, Any], b: dict[str, Any], where: str) -> dict[str, Any]:
    out = dict(a)
    for key, value in b.items():
        if key in ANNOTATIONS or key not in out:
            if key not in ANNOTATIONS:
                out[key] = value
            continue
        old = out[key]
        if key == "properties":
            merged = dict(old)
            for name, sub in value.items():
                merged[name] = {"allOf": [merged[name], sub]} if name in merged else sub
            out[key] = merged
        elif key == "required":
            out[key] = list(dict.fromkeys(list(old) + list(value)))
        elif key == "type":
            out[key] = _intersect_types(old, value, where)
        elif key == "enum":
            out[key] = [v for v in old if v in value]
        elif key in _MIN_KEYS:
            out[key] = max(old, value)
        elif key in _MAX_KEYS:
            out[key] = min(old, value)
        elif key in ("additionalProperties", "items") and isinstance(old, (dict, bool)) and isinstance(value, (dict, bool)):
            out[key] = False if old is False or value is False else {"allOf": [old, value]}
        elif old != value:
            raise GrammarError(f"{where}/allOf: conflicting values for keyword {key!r}")
    if b.get("additionalProperties") is False or a.get("additionalProperties") is False:
        closed = b if b.get("additionalProperties") is False else a
        allowed = set(closed.get("properties", {}))
        props = out.get("properties", {})
        out["properties"] = {k: v for k, v in props.items() if k in allowed}
        if any(r not in allowed for r in out.get("required", [])):
            out["type"] = []
    return out


def _intersect_types(a: Any, b: Any, where: str) -> list[str]:
    la = [a] if isinstance(a, str) else list(a)
    lb = [b] if isinstance(b, str) else list(b)
    out = [t for t in la if t in lb]
    if "integer" in la and "number" in lb or "number" in la and "integer" in lb:
        out.append("integer")
    return list(dict.fromkeys(out))


def _kinds(root: Any, schema: Any, where: str) -> set[str] | None:
    """JSON types a branch can produce, when that is easy to know."""
    try:
        merged = merge_all(root, schema, where) if isinstance(schema, dict) else schema
    except GrammarError:
        return None
    if not isinstance(merged, dict) or "anyOf" in merged or "oneOf" in merged:
        return None
    values = [merged["const"]] if "const" in merged else merged.get("enum")
    if values is not None:
        return {f"value:{v!r}" for v in values}
    t = merged.get("type")
    if t is None:
        return None
    types = {t} if isinstance(t, str) else set(t)
    if "number" in types:
        types.add("integer")
    if merged.get("nullable") is True:
        types.add("null")
    return types


def one_of_disjoint(root: Any, branches: list[Any], rest: dict[str, Any], where: str) -> bool:
    """True when at most one branch can match any instance (by type or by const/enum values)."""
    seen: list[set[str]] = []
    for i, branch in enumerate(branches):
        kinds = _kinds(root, branch, f"{where}/{i}")
        if kinds is None:
            return False
        if any("integer" in kinds and any(k.startswith("value:") for k in other) for other in seen):
            return False
        for other in seen:
            if kinds & other:
                return False
            if any(k.startswith("value:") for k in kinds) != any(k.startswith("value:") for k in other):
                return False
        seen.append(kinds)
    return True
