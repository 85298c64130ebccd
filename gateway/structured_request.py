"""The request fields that constrain output (`response_format`, vLLM's `structured_outputs`) as one engine spec.

Exactly one constraint per request: the field that set it is remembered as `param` so
that a schema the engine's compiler refuses is reported against that field. Unknown or
unsupported options are refused with a 400, never ignored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from gateway.errors import bad_request
from schemas.engine import StructuredSpec

# structured_outputs keys that choose the constraint (exactly one of them).
_KINDS = ("json", "regex", "choice", "grammar", "json_object", "structural_tag")
# Options that do not change the grammar here: we never fall back to another backend.
_NEUTRAL = ("disable_fallback",)
# Every option structured_outputs may carry; the whitespace ones are read by `_whitespace`.
_OPTIONS = frozenset(_KINDS + _NEUTRAL + ("whitespace_pattern", "disable_any_whitespace", "disable_additional_properties"))
_GUIDED = ("json", "regex", "choice", "grammar", "whitespace_pattern")  # guided_<key> -> structured_outputs[key]


@dataclass(frozen=True, slots=True)
class Constraint:
    """An engine constraint and the request field it came from (for error messages)."""

    spec: StructuredSpec
    param: str


def _schema_text(value: Any, label: str) -> str:
    """`value` (an object or its JSON text) as JSON text; `label` is the dotted field for messages."""
    param = label.split(".")[0]
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise bad_request(f"{label} is not valid JSON: {exc}", param) from None
    if not isinstance(value, (dict, bool)):
        raise bad_request(f"{label} must be a JSON schema object", param)
    return json.dumps(value, ensure_ascii=False)


def _legacy_structural_tag(fmt: dict[str, Any], label: str) -> str:
    """vLLM's `{"type": "structural_tag", "structures": [{begin, schema, end}], "triggers": [...]}`
    as our structural-tag spec: free text in which each begin string opens a constrained call.
    Triggers are implied by the begin strings (a call starts when its whole begin is written)."""
    param = label.split(".")[0]
    structures = fmt.get("structures")
    if not isinstance(structures, list) or not structures:
        if "format" in fmt:
            raise bad_request(f"{label}: the structural_tag 'format' form is not supported; use 'structures'", param)
        raise bad_request(f"{label}.structures must be a non-empty list of {{begin, schema, end}}", param)
    alternatives = []
    for i, item in enumerate(structures):
        if not isinstance(item, dict) or not isinstance(item.get("begin"), str) or not isinstance(item.get("end"), str):
            raise bad_request(f"{label}.structures[{i}] needs string 'begin' and 'end'", param)
        schema = item.get("schema", item.get("parameters", {"type": "object"}))
        alternatives.append({"begin": item["begin"], "schema": json.loads(_schema_text(schema, label)), "end": item["end"]})
    triggers = fmt.get("triggers")
    if triggers is not None and not all(
        isinstance(t, str) and any(a["begin"].startswith(t) for a in alternatives) for t in triggers
    ):
        raise bad_request(f"{label}.triggers must each be a prefix of some structure's begin", param)
    spec = {"alternatives": alternatives, "separator": "", "allow_free_text": True, "min_calls": 0}
    return json.dumps(spec, ensure_ascii=False)


def from_response_format(fmt: dict[str, Any] | None) -> Constraint | None:
    """`response_format`: text (no constraint), json_object, json_schema, structural_tag."""
    if not fmt or fmt.get("type") in (None, "text"):
        return None
    kind = fmt.get("type")
    if kind == "json_object":
        return Constraint(StructuredSpec(json_object=True), "response_format")
    if kind == "json_schema":
        spec = fmt.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, dict) else None
        if not isinstance(schema, dict):
            raise bad_request("response_format.json_schema.schema must be an object", "response_format")
        return Constraint(StructuredSpec(json_schema=json.dumps(schema, ensure_ascii=False)), "response_format")
    if kind == "structural_tag":
        text = _legacy_structural_tag(fmt, "response_format")
        return Constraint(StructuredSpec(structural_tag=text), "response_format")
    raise bad_request(f"unknown response_format type {kind!r}", "response_format")


def _whitespace(options: dict[str, Any]) -> str:
    if options.get("whitespace_pattern") is not None:
        raise bad_request("structured_outputs.whitespace_pattern is not supported: whitespace is compact, "
                          "or bounded with disable_any_whitespace=false", "structured_outputs")  # fmt: skip
    if options.get("disable_additional_properties"):
        raise bad_request("structured_outputs.disable_additional_properties is not supported: "
                          "set additionalProperties: false in the schema", "structured_outputs")  # fmt: skip
    return "flexible" if options.get("disable_any_whitespace") is False else "compact"


def from_structured_outputs(options: dict[str, Any] | None) -> Constraint | None:
    """vLLM's `structured_outputs: {json | regex | choice | grammar | json_object | structural_tag}`."""
    if options is None:
        return None
    param = "structured_outputs"
    unknown = set(options) - _OPTIONS
    if unknown:
        raise bad_request(f"{param} has unknown option(s) {sorted(unknown)}", param)
    kinds = [k for k in _KINDS if options.get(k) not in (None, False)]
    if len(kinds) != 1:
        raise bad_request(f"{param} must set exactly one of {', '.join(_KINDS)}; got {kinds or 'none'}", param)
    kind, value = kinds[0], options[kinds[0]]
    whitespace = _whitespace(options)
    if kind == "json":
        spec = StructuredSpec(json_schema=_schema_text(value, f"{param}.json"), whitespace=whitespace)
    elif kind == "json_object":
        spec = StructuredSpec(json_object=True, whitespace=whitespace)
    elif kind == "regex":
        if not isinstance(value, str):
            raise bad_request(f"{param}.regex must be a string", param)
        spec = StructuredSpec(regex=value)
    elif kind == "choice":
        if not isinstance(value, list) or not value or not all(isinstance(c, str) for c in value):
            raise bad_request(f"{param}.choice must be a non-empty list of strings", param)
        spec = StructuredSpec(choice=list(value))
    elif kind == "grammar":
        if not isinstance(value, str):
            raise bad_request(f"{param}.grammar must be a string (GBNF or Lark)", param)
        # GBNF (llama.cpp, xgrammar's EBNF) defines rules with `::=`; Lark with `:`.
        spec = StructuredSpec(gbnf=value) if "::=" in value else StructuredSpec(lark=value)
    else:
        fmt = json.loads(_schema_text(value, f"{param}.structural_tag")) if isinstance(value, str) else value
        if not isinstance(fmt, dict):
            raise bad_request(f"{param}.structural_tag must be an object", param)
        spec = StructuredSpec(structural_tag=_legacy_structural_tag(fmt, f"{param}.structural_tag"))
    return Constraint(spec, param)


def _guided_options(req: Any) -> dict[str, Any] | None:
    """vLLM's older `guided_*` fields as a `structured_outputs` dict (the backend choice has no meaning here)."""
    options = {key: getattr(req, f"guided_{key}") for key in _GUIDED if getattr(req, f"guided_{key}") is not None}
    if not options:
        return None
    if req.structured_outputs is not None:
        raise bad_request("guided_* fields and structured_outputs cannot both be set", "structured_outputs")
    return options


def request_constraint(req: Any) -> Constraint | None:
    """The one constraint a request's body asks for (chat or completions); two at once is a 400."""
    a = from_response_format(req.response_format)
    guided = _guided_options(req)
    b = from_structured_outputs(guided if guided is not None else req.structured_outputs)
    if a is not None and b is not None:
        raise bad_request("response_format and structured_outputs cannot both constrain the output", "structured_outputs")
    return a or b
