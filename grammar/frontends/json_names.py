"""`propertyNames`: the language every property name of an object must be in, and the check of its declared names.

A declared name is kept when a validator finds it valid under `propertyNames` (a declared name
that is not is never written; a required one makes the object impossible). The names of extra
members (additionalProperties, patternProperties) are intersected with the regular language of
the `propertyNames` schema in canonical encodings (its pattern, format, lengths and enum, as a
string's content: grammar/frontends/json_text.py string_body). A `propertyNames` schema with
keywords that do not describe strings (or a type without `string`) allows no name at all, as
JSON Schema reads it; one we cannot state as a language raises, naming `propertyNames`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from grammar.errors import GrammarError
from grammar.frontends.json_closed import closed_copy
from grammar.frontends.json_merge import ANNOTATIONS, as_standard, merge_all
from grammar.frontends.json_text import canonical_text, json_char, string_body, string_format
from grammar.frontends.regular import Dfa, intersect, to_dfa
from grammar.frontends.unicode import ALL_CHARS
from grammar.ir import NOTHING, alt

_STRING_KEYS = {"type", "pattern", "minLength", "maxLength", "format", "enum", "const"}


def property_names(sc: Any, schema: dict[str, Any], where: str) -> tuple[Dfa | None, Callable[[str], bool]]:
    """(the language of extra members' names, None for any; whether a declared name may be written)."""
    names = schema.get("propertyNames", True)
    here = f"{where}/propertyNames"
    if isinstance(names, dict) and ("$ref" in names or "allOf" in names):
        names = merge_all(sc.root, names, here)
    if isinstance(names, dict):
        names = {k: v for k, v in names.items() if k not in ANNOTATIONS}
    if names is True or names == {}:
        return None, lambda name: True
    if names is False:
        return to_dfa(NOTHING), lambda name: False
    if not isinstance(names, dict):
        raise GrammarError(f"{here}: a schema must be an object or a boolean")
    if not set(names) <= _STRING_KEYS:
        raise GrammarError(f"{here}: only string keywords (pattern, format, lengths, enum) are supported")
    declared = names.get("type", "string")
    if "string" not in ([declared] if isinstance(declared, str) else declared):
        return to_dfa(NOTHING), lambda name: False
    if "format" in names and string_format(names, here) is None:
        sc.unknown_format(here, names["format"])
    return _language(names, here), _checker(sc, names)


def _language(names: dict[str, Any], where: str) -> Dfa:
    char = json_char(ALL_CHARS)
    lang = to_dfa(string_body({k: v for k, v in names.items() if k not in ("enum", "const")}, where, char))
    values = [names["const"]] if "const" in names else names.get("enum")
    if values is not None:
        lang = intersect(lang, to_dfa(alt(*[canonical_text(v) for v in values if isinstance(v, str)])))
    return lang


def _checker(sc: Any, names: dict[str, Any]) -> Callable[[str], bool]:
    import jsonschema

    validator = jsonschema.validators.validator_for(sc.root if isinstance(sc.root, dict) else {})
    check = validator(as_standard(closed_copy(names) if sc.strict else names))
    return lambda name: bool(check.is_valid(name))
