"""What a document's draft changes in how its keywords read: before 2019-09, `$ref` hides its siblings.

In drafts 3 to 7 a schema holding `$ref` is that reference alone: validators ignore every other
keyword beside it (`{"$ref": "#/definitions/p", "enum": ["key"]}` takes whatever `p` takes), where
2019-09 on, and our compiler, read them as a conjunction. A document that names such a draft in its
`$schema` (as `jsonschema.validators.validator_for` reads it, the validator the lenient check and
the tests use) is compiled as its validator reads it: the assertion keywords beside each `$ref` are
dropped (a wider language, exactly the validator's). Other keys stay (definitions a pointer may
reach, annotations); a document with a `$ref` pointing into a dropped keyword is left as it is (the
conjunction: a subset of its valid instances).
"""

from __future__ import annotations

from typing import Any

from urllib.parse import unquote

from grammar.frontends.json_merge import SUPPORTED, UNSUPPORTED

OLD_DRAFTS = ("Draft3Validator", "Draft4Validator", "Draft6Validator", "Draft7Validator")
_SCHEMA_MAPS = ("properties", "patternProperties", "definitions", "$defs", "dependencies", "dependentSchemas")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "items", "prefixItems")
_SCHEMAS = ("items", "additionalProperties", "additionalItems", "not", "if", "then", "else", "contains",
            "propertyNames")  # fmt: skip


def as_validated(root: Any) -> Any:
    """`root` as its draft's validator reads it (a copy where that changes anything)."""
    if not isinstance(root, dict) or not isinstance(root.get("$schema"), str):
        return root
    import jsonschema

    validator = jsonschema.validators.validator_for(root, default=None)
    if validator is None or validator.__name__ not in OLD_DRAFTS:
        return root
    dropped: list[str] = []  # pointers of the keywords dropped
    targets: list[str] = []  # the $ref pointers of the document
    out = _drop_siblings(root, "", dropped, targets)
    gone = set(dropped)
    if not gone or any(prefix in gone for t in targets for prefix in _prefixes(t)):
        return root
    return out


def _drop_siblings(schema: Any, where: str, dropped: list[str], targets: list[str]) -> Any:
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    if isinstance(schema.get("$ref"), str):
        ref = schema["$ref"]
        targets.append(unquote(ref[1:] if ref.startswith("#") else ref))
        for key in [k for k in out if (k in SUPPORTED or k in UNSUPPORTED) and k != "$ref"]:
            dropped.append(f"{where}/{_escape(key)}")
            del out[key]
    for key, value in out.items():
        here = f"{where}/{_escape(key)}"
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {k: _drop_siblings(v, f"{here}/{_escape(k)}", dropped, targets) for k, v in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_drop_siblings(v, f"{here}/{i}", dropped, targets) for i, v in enumerate(value)]
        elif key in _SCHEMAS and isinstance(value, dict):
            out[key] = _drop_siblings(value, here, dropped, targets)
    return out


def _prefixes(pointer: str) -> list[str]:
    """`/a/b/c` -> `/a`, `/a/b`, `/a/b/c`."""
    parts = pointer.split("/")
    return ["/".join(parts[:i]) for i in range(2, len(parts) + 1)]


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")
