"""Lenient JSON Schema: where no exact grammar exists, a wider schema to compile instead.

`--structured-outputs-lenient` (engine/structured.py): a schema whose compile raises a GrammarError
is widened at the keyword the error names and compiled again, until it compiles (at most
MAX_WIDENINGS times; then any JSON value). Each widening only lets more documents through, never
fewer valid ones: an assertion keyword is dropped (`uniqueItems`, `contains`, `not`, a whole
`if`/`then`/`else`, `dependencies`, `propertyNames`, counts, a `pattern`, `format`, `multipleOf`),
a `oneOf` becomes an `anyOf`, `patternProperties` go with `additionalProperties` (every extra
member any value); a keyword under a `not` or an `if` drops that `not` or conditional instead
(dropping inside a negation would narrow it), and a pointer that does not resolve (a location
inside a merged `allOf` or `$ref`) drops the keyword wherever it appears. The engine checks the
finished document against the original schema with `jsonschema` and reports a violation.
"""

from __future__ import annotations

import copy
import re
from typing import Any
from urllib.parse import unquote

MAX_WIDENINGS = 32
DROPPED = frozenset({
    "uniqueItems", "contains", "minContains", "maxContains", "unevaluatedProperties", "unevaluatedItems",
    "not", "dependencies", "dependentRequired", "dependentSchemas", "propertyNames", "minProperties",
    "maxProperties", "pattern", "format", "multipleOf", "minLength", "maxLength", "minItems", "maxItems",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "$dynamicRef", "$recursiveRef", "enum", "const",
})  # fmt: skip
CONDITIONAL = ("if", "then", "else")
KNOWN = DROPPED | {"oneOf", "patternProperties", "if"}
_POINTER = re.compile(r"^(/[^:\s]*)")


def widen(schema: Any, message: str) -> tuple[Any, str]:
    """(a wider copy of `schema`, what was relaxed) for a GrammarError `message` ("/pointer/keyword:
    why"); the note names the keyword and its pointer."""
    match = _POINTER.match(message)
    pointer = match.group(1) if match else ""
    parts = [unquote(p).replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]
    out = copy.deepcopy(schema)
    if not isinstance(out, dict):
        return True, f"{pointer or '/'}: any JSON value"
    keyword = next((p for p in reversed(parts) if p in DROPPED or p in CONDITIONAL or p in ("oneOf", "patternProperties",
                                                                                            "additionalProperties")), None)  # fmt: skip
    if keyword is None:  # no keyword in the pointer ("/allOf: patternProperties merged with ..."): by name
        named = re.findall(r"\b(" + "|".join(sorted(KNOWN, key=len, reverse=True)) + r")\b", message)
        if named and _relax_everywhere(out, named[0]):
            return out, f"{named[0]} (everywhere: {pointer or '/'} names no keyword)"
        return _widest(out, message)
    where = parts[: len(parts) - 1 - parts[::-1].index(keyword)]
    # a keyword under `not` or a condition: drop the outermost negation or conditional around it
    for i, part in enumerate(where):
        if part == "not" or part in CONDITIONAL:
            where, keyword = where[:i], part
            break
    node = _resolve(out, where)
    if isinstance(node, dict) and (keyword in node or keyword in CONDITIONAL and "if" in node):
        _relax(node, keyword)
        return out, f"/{'/'.join(where)}/{keyword}".replace("//", "/")
    found = _relax_everywhere(out, keyword)
    if found:
        return out, f"{keyword} (everywhere: {pointer} is inside a merged part)"
    return _widest(out, message)


def _widest(schema: dict[str, Any], message: str) -> tuple[Any, str]:
    return True, f"the whole schema (any JSON value): {message[:120]}"


def _resolve(root: Any, parts: list[str]) -> Any:
    node = root
    for part in parts:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _relax(node: dict[str, Any], keyword: str) -> None:
    if keyword == "oneOf":
        branches = node.pop("oneOf")
        if "anyOf" in node:  # both: all of them, each any of its own
            node["allOf"] = [*node.get("allOf", []), {"anyOf": node.pop("anyOf")}, {"anyOf": branches}]
        else:
            node["anyOf"] = branches
    elif keyword in CONDITIONAL:
        for key in CONDITIONAL:
            node.pop(key, None)
    elif keyword in ("patternProperties", "additionalProperties"):
        node.pop("patternProperties", None)
        node.pop("additionalProperties", None)
    else:
        node.pop(keyword, None)


def _relax_everywhere(node: Any, keyword: str) -> bool:
    found = False
    if isinstance(node, dict):
        if keyword in node or (keyword in CONDITIONAL and "if" in node):
            _relax(node, keyword)
            found = True
        for value in list(node.values()):
            found |= _relax_everywhere(value, keyword)
    elif isinstance(node, list):
        for value in node:
            found |= _relax_everywhere(value, keyword)
    return found
