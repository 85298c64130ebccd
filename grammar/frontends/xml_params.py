"""Tool-call arguments written as XML-style parameters (qwen3-coder, GLM, MiniMax, DeepSeek DSML).

Each parameter is `begin(key) value end`, in the schema's declared order, required ones
always, optional ones or not. A parameter whose schema is a plain string is raw text up to
the closing string (the parsers keep it verbatim); any other value is compact JSON text for
its schema (the parsers read it with a JSON decoder). A string-or-other union is refused: the
parsers would read a JSON-looking string as the other type. `begin` may hold `{string}`,
filled with "true" before raw text and "false" before JSON (DeepSeek DSML's attribute).
"""

from __future__ import annotations

from typing import Any

from grammar.errors import GrammarError
from grammar.ir import EMPTY, NOTHING, Node, alt, lit, opt, seq
from grammar.frontends.json_merge import ANNOTATIONS
from grammar.frontends.json_schema import SchemaCompiler
from grammar.frontends.text_scan import text_until

STRING_ONLY_KEYS = frozenset({"type", "enum", "const"})  # string keywords a raw value can carry


def xml_params_grammar(schema: Any, begin: str, end: str, where: str, strict: bool = False):
    """A grammar of the parameters of one call (start rule: the parameters, no call framing);
    `strict` closes the objects and tuples inside parameter values (grammar/frontends/json_closed.py)."""
    sc = SchemaCompiler(schema, "compact", strict)
    return sc.finish(xml_params_node(sc, schema, begin, end, where))


def xml_params_node(sc: SchemaCompiler, schema: Any, begin: str, end: str, where: str) -> Node:
    if schema is True or schema == {}:
        return EMPTY  # no declared parameters: none are written
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        raise GrammarError(f"{where}: XML-style parameters need an object schema")
    unknown = schema.keys() - ANNOTATIONS - {"type", "properties", "required", "additionalProperties"}
    if unknown:
        raise GrammarError(f"{where}/{sorted(unknown)[0]}: not supported for XML-style parameters")
    props = schema.get("properties", {})
    required = schema.get("required", [])
    if not isinstance(props, dict) or not isinstance(required, list):
        raise GrammarError(f"{where}: 'properties' must be an object and 'required' an array")
    for name in required:
        if name not in props:
            raise GrammarError(f"{where}/required: {name!r} is not a declared property")
    items = []
    for key, sub in props.items():
        here = f"{where}/properties/{key.replace('~', '~0').replace('/', '~1')}"
        param = _param(sc, key, sub, begin, end, here)
        if param == NOTHING:
            if key in required:
                return NOTHING
            continue
        items.append(param if key in required else opt(param))
    return seq(*items)


def _param(sc: SchemaCompiler, key: str, schema: Any, begin: str, end: str, where: str) -> Node:
    stop = end.encode()
    raw = _raw_string_values(schema, end, where)
    opening = begin.replace("{key}", key)
    if raw is not None:
        value = text_until(stop) if raw == "any" else alt(*[lit(v + end) for v in raw])
        return seq(lit(opening.replace("{string}", "true")), value)
    if _may_be_string(schema):
        raise GrammarError(f"{where}: a parameter that may be a string or another type is not supported for "
                           f"XML-style parameters")  # fmt: skip
    return seq(lit(opening.replace("{string}", "false")), sc.node(schema, where), lit(end))


def _raw_string_values(schema: Any, end: str, where: str) -> list[str] | str | None:
    """"any" for an unconstrained string, its values for a string enum, None when not a string."""
    if not isinstance(schema, dict) or schema.get("type") != "string":
        return None
    extra = schema.keys() - ANNOTATIONS - STRING_ONLY_KEYS
    if extra:
        raise GrammarError(f"{where}/{sorted(extra)[0]}: string constraints are not supported for XML-style "
                           f"parameters (only enum and const)")  # fmt: skip
    if "const" in schema or "enum" in schema:
        values = [schema["const"]] if "const" in schema else schema["enum"]
        if not isinstance(values, list) or not all(isinstance(v, str) and end not in v for v in values):
            raise GrammarError(f"{where}/enum: must be strings without {end!r}")
        return values
    return "any"


def _may_be_string(schema: Any) -> bool:
    """Whether the parsers would read this parameter's text as a string (they look at `type`,
    then anyOf/oneOf branches, enum values, properties or items; nothing found = string)."""
    if not isinstance(schema, dict):
        return True
    declared = schema.get("type")
    if declared is not None:
        return "string" in ([declared] if isinstance(declared, str) else declared)
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return any(_may_be_string(branch) for branch in schema[key])
    if isinstance(schema.get("enum"), list):
        return any(isinstance(v, str) for v in schema["enum"])
    return "properties" not in schema and "items" not in schema
