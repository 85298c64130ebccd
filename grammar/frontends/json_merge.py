"""JSON Schema keyword bookkeeping: supported/annotation sets, $ref pointers, allOf merging, oneOf checks."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

from grammar.errors import GrammarError
from grammar.frontends.json_closed import closes_object

ANNOTATIONS = frozenset({
    "title", "description", "default", "examples", "example", "$schema", "$id", "id", "$comment",
    "deprecated", "readOnly", "writeOnly", "$defs", "definitions", "contentMediaType",
    "contentEncoding", "$anchor", "discriminator", "markdownDescription", "xml", "externalDocs",
})
DEPENDENCY_KEYS = ("dependencies", "dependentRequired", "dependentSchemas")
# Internal keyword: a oneOf whose branches only require properties, as a list of groups (lists
# of required lists), each group satisfied by exactly one of its required lists.
ONE_OF_REQUIRED = "@oneOfRequired"
# Internal keywords of a narrowed oneOf branch (grammar/frontends/json_one_of.py): names an object
# must not hold, and string constraints a string must not meet.
FORBID = "@forbid"
EXCLUDE_STRINGS = "@excludeStrings"
SUPPORTED = frozenset({
    "type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "properties", "required",
    "additionalProperties", "items", "prefixItems", "additionalItems", "minItems", "maxItems",
    "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "nullable", "uniqueItems", "minProperties", "maxProperties",
    "patternProperties", "not", "dependencies", "dependentRequired", "dependentSchemas", "propertyNames",
    ONE_OF_REQUIRED, FORBID, EXCLUDE_STRINGS,
})
UNSUPPORTED = frozenset({
    "if", "then", "else",
    "contains", "minContains", "maxContains",
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
    if schema.get("uniqueItems") is True and not (isinstance(schema.get("maxItems"), int) and schema["maxItems"] <= 1) \
            and not isinstance(schema.get("items"), dict):  # items of a few values: json_unique.py decides
        raise GrammarError(f"{where}/uniqueItems: keyword 'uniqueItems' is not supported")


def as_standard(schema: Any) -> Any:
    """`schema` with the internal keywords (ONE_OF_REQUIRED, FORBID, EXCLUDE_STRINGS) spelled in
    standard JSON Schema, for a validator (which would ignore them) to check values against."""
    if isinstance(schema, list):
        return [as_standard(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: as_standard(v) for k, v in schema.items() if k not in (ONE_OF_REQUIRED, FORBID, EXCLUDE_STRINGS)}
    extra: list[Any] = [{"oneOf": [{"required": list(r)} for r in group]} for group in schema.get(ONE_OF_REQUIRED, [])]
    extra += [{"not": {"required": [name]}} for name in schema.get(FORBID, [])]
    extra += [{"not": {"type": "string", **as_standard(c)}} for c in schema.get(EXCLUDE_STRINGS, [])]
    if extra:
        out["allOf"] = [*out.get("allOf", []), *extra]
    return out


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
        if key not in SUPPORTED:
            continue  # annotations and unknown (vendor) keywords carry no validation
        if key not in out:
            out[key] = value
            continue
        old = out[key]
        if key in ("properties", "patternProperties") and isinstance(old, dict) and isinstance(value, dict):
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
        elif key in (ONE_OF_REQUIRED, EXCLUDE_STRINGS):
            out[key] = old + value
        elif key == FORBID:
            out[key] = list(dict.fromkeys(old + value))
        elif key in DEPENDENCY_KEYS and isinstance(old, dict) and isinstance(value, dict):
            out[key] = _merge_dependencies(old, value, where, key)
        elif key == "not":  # not A and not B == not (A or B)
            out[key] = {"anyOf": [old, value]}
        elif key in ("additionalProperties", "items", "propertyNames") and isinstance(old, (dict, bool)) and isinstance(value, (dict, bool)):
            out[key] = False if old is False or value is False else {"allOf": [old, value]}
        elif old != value:
            raise GrammarError(f"{where}/allOf: conflicting values for keyword {key!r}")
    object_keys = ("properties", "additionalProperties", "patternProperties")  # `required` alone merges exactly
    if "patternProperties" in out and any(k in a for k in object_keys) and any(k in b for k in object_keys) and not (
            a.get("additionalProperties", True) is True and b.get("additionalProperties", True) is True):
        # Both parts open: a name's schema is each part's (declared, or its matching patterns) together,
        # which the merged properties and patterns say exactly. With additionalProperties in a part,
        # a name that only the other part's patterns match would need that part's extra schema too.
        raise GrammarError(f"{where}/allOf: patternProperties merged with other object keywords is not supported")
    for part in (a, b):  # a part's additionalProperties holds for the names only the other part declares
        extra = part.get("additionalProperties")
        if extra is None or extra is True or "properties" not in out:
            continue
        declared, patterns = set(part.get("properties", {})), list(part.get("patternProperties", {}))

        def allowed(name: str) -> bool:  # by this part: declared, or matched by one of its patterns
            return name in declared or any(_search(p, name) for p in patterns)

        props = out["properties"]
        if extra is False:
            out["properties"] = {k: v for k, v in props.items() if allowed(k)}
            if any(not allowed(r) for r in out.get("required", [])):
                out["type"] = []
        else:
            out["properties"] = {k: v if allowed(k) else {"allOf": [v, extra]} for k, v in props.items()}
    return out


def _search(pattern: str, name: str) -> bool:
    try:
        return re.search(pattern, name) is not None
    except re.error:  # refused with its pointer where the object is compiled (json_patterns.pattern_schemas)
        return False


def _merge_dependencies(a: dict[str, Any], b: dict[str, Any], where: str, key: str) -> dict[str, Any]:
    """Both parts' dependencies: the property lists (or `required`-only schemas) of a trigger united."""
    out = dict(a)
    for trigger, need in b.items():
        if trigger not in out:
            out[trigger] = need
        elif isinstance(need, list) and isinstance(out[trigger], list):
            out[trigger] = list(dict.fromkeys(out[trigger] + need))
        elif isinstance(need, dict) and isinstance(out[trigger], dict) and need.keys() == out[trigger].keys() == {"required"}:
            out[trigger] = {"required": list(dict.fromkeys(out[trigger]["required"] + need["required"]))}
        else:
            raise GrammarError(f"{where}/allOf: conflicting {key!r} for property {trigger!r}")
    return out


def _intersect_types(a: Any, b: Any, where: str) -> list[str]:
    la = [a] if isinstance(a, str) else list(a)
    lb = [b] if isinstance(b, str) else list(b)
    out = [t for t in la if t in lb]
    if "integer" in la and "number" in lb or "number" in la and "integer" in lb:
        out.append("integer")
    return list(dict.fromkeys(out))


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int) or isinstance(value, float) and value.is_integer():
        return "integer"
    return {float: "number", str: "string", list: "array", dict: "object"}.get(type(value), "?")


def _branch(root: Any, schema: Any, where: str) -> tuple[set[str], Any] | None:
    """(possible JSON types, the merged schema) of a oneOf branch, when that is easy to know."""
    try:
        merged = merge_all(root, schema, where) if isinstance(schema, dict) else schema
    except GrammarError:
        return None
    if not isinstance(merged, dict) or "anyOf" in merged or "oneOf" in merged:
        return None
    values = [merged["const"]] if "const" in merged else merged.get("enum")
    if values is not None:
        return {_json_type(v) for v in values}, merged
    t = merged.get("type")
    if t is None:
        return None
    types = {t} if isinstance(t, str) else set(t)
    if "number" in types:
        types.add("integer")
    if merged.get("nullable") is True:
        types.add("null")
    return types, merged


def _values(schema: Any) -> list[Any] | None:
    if not isinstance(schema, dict):
        return None
    return [schema["const"]] if "const" in schema else schema.get("enum")


def _exclusive(root: Any, a: tuple[set[str], Any], b: tuple[set[str], Any], strict: bool) -> bool:
    """True when no instance can be valid under both branches."""
    (ta, sa), (tb, sb) = a, b
    if not ta & tb:
        return True
    va, vb = _values(sa), _values(sb)
    if va is not None and vb is not None:
        return not any(x == y and type(x) is type(y) for x in va for y in vb)
    if ta == tb == {"object"}:
        return _objects_exclusive(root, sa, sb, strict) or _objects_exclusive(root, sb, sa, strict)
    return False


def _objects_exclusive(root: Any, sa: dict[str, Any], sb: dict[str, Any], strict: bool) -> bool:
    if "patternProperties" in sa or "patternProperties" in sb:
        return False  # which keys a pattern admits is not compared: never claim exclusivity
    pa, pb = sa.get("properties", {}), sb.get("properties", {})
    ra, rb = set(sa.get("required", [])), set(sb.get("required", []))
    if sa.get("additionalProperties") is False and any(k not in pa for k in rb):
        return True
    if closes_object(sa, strict) and any(k not in pa and k not in ra for k in rb):  # strict: only these names
        return True
    for key in ra & rb:
        xa = _values(_resolve(root, pa.get(key)))
        xb = _values(_resolve(root, pb.get(key)))
        if xa is not None and xb is not None and not any(x == y for x in xa for y in xb):
            return True
    return False


def _resolve(root: Any, schema: Any) -> Any:
    if isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and schema["$ref"].startswith("#"):
        try:
            return resolve_pointer(root, schema["$ref"][1:], "")
        except GrammarError:
            return None
    return schema


def required_only(root: Any, branches: list[Any]) -> list[list[str]] | None:
    """The required lists of oneOf branches that say nothing but `required`, else None."""
    lists = []
    for branch in branches:
        branch = _resolve(root, branch)
        if not isinstance(branch, dict):
            return None
        rest = {k: v for k, v in branch.items() if k not in ANNOTATIONS}
        required = rest.get("required", [])
        if rest.keys() - {"required"} or not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            return None
        lists.append(required)
    return lists


def one_of_disjoint(root: Any, branches: list[Any], rest: dict[str, Any], where: str, strict: bool = False) -> bool:
    """True when at most one branch can match any instance (types, values, object discriminators);
    `strict`: objects as strict mode closes them (grammar/frontends/json_closed.py)."""
    infos = []
    for i, branch in enumerate(branches):
        info = _branch(root, {"allOf": [rest, branch]} if rest else branch, f"{where}/{i}")
        if info is None:
            return False
        infos.append(info)
    return all(_exclusive(root, infos[i], infos[j], strict) for i in range(len(infos)) for j in range(i))
