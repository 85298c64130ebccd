"""The request fields that constrain output (`response_format`, vLLM's `structured_outputs` and its
older `guided_*` fields) as one engine spec.

The wire types (schemas/output_constraints.py) are tagged unions, so a wrong kind or a mistyped
field is a decode 400 already; what is left here is what types cannot say (exactly one kind,
valid JSON text, options we do not support), each a 400 naming the field. Exactly one
constraint per request: the field that set it is remembered as `param` so that a schema the
engine's compiler refuses at admission is reported against that field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import msgspec

from gateway.errors import bad_request
from schemas.engine import (
    ChoiceSpec,
    GbnfSpec,
    JsonObjectSpec,
    JsonSchemaSpec,
    LarkSpec,
    RegexSpec,
    StructuralTagSpec,
    StructuredSpec,
)
from schemas.output_constraints import (
    JsonObjectFormat,
    JsonSchemaFormat,
    ResponseFormat,
    StructuralTagFormat,
    StructureDef,
    StructuredOutputsOptions,
    TextFormat,
)

# structured_outputs keys that choose the constraint (exactly one of them).
_KINDS = ("json", "regex", "choice", "grammar", "json_object", "structural_tag")
_GUIDED = ("json", "regex", "choice", "grammar", "whitespace_pattern")  # guided_<key> -> structured_outputs.<key>


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


def _legacy_structural_tag(structures: list[StructureDef] | None, triggers: list[str] | None, fmt: Any,
                           label: str) -> StructuralTagSpec:  # fmt: skip
    """vLLM's `{"type": "structural_tag", "structures": [{begin, schema, end}], "triggers": [...]}`
    as our structural-tag spec: free text in which each begin string opens a constrained call.
    Triggers are implied by the begin strings (a call starts when its whole begin is written)."""
    param = label.split(".")[0]
    if not structures:
        if fmt is not None:
            raise bad_request(f"{label}: the structural_tag 'format' form is not supported; use 'structures'", param)
        raise bad_request(f"{label}.structures must be a non-empty list of {{begin, schema, end}}", param)
    alternatives = []
    for item in structures:
        schema = item.schema if item.schema is not None else item.parameters
        schema = {"type": "object"} if schema is None else schema
        alternatives.append({"begin": item.begin, "schema": json.loads(_schema_text(schema, label)), "end": item.end})
    if triggers is not None and not all(any(a["begin"].startswith(t) for a in alternatives) for t in triggers):
        raise bad_request(f"{label}.triggers must each be a prefix of some structure's begin", param)
    spec = {"alternatives": alternatives, "separator": "", "allow_free_text": True, "min_calls": 0}
    return StructuralTagSpec(structural_tag=json.dumps(spec, ensure_ascii=False))


def from_response_format(fmt: ResponseFormat | None) -> Constraint | None:
    """`response_format`: text (no constraint), json_object, json_schema, structural_tag."""
    if fmt is None or isinstance(fmt, TextFormat):
        return None
    if isinstance(fmt, JsonObjectFormat):
        return Constraint(JsonObjectSpec(), "response_format")
    if isinstance(fmt, JsonSchemaFormat):
        text = json.dumps(fmt.json_schema.schema, ensure_ascii=False)
        return Constraint(JsonSchemaSpec(json_schema=text), "response_format")
    if not isinstance(fmt, StructuralTagFormat):
        raise bad_request(f"unknown response_format {type(fmt).__name__}", "response_format")
    return Constraint(_legacy_structural_tag(fmt.structures, fmt.triggers, fmt.format, "response_format"),
                      "response_format")  # fmt: skip


def _whitespace(options: StructuredOutputsOptions) -> str:
    if options.whitespace_pattern is not None:
        raise bad_request("structured_outputs.whitespace_pattern is not supported: whitespace is compact, "
                          "or bounded with disable_any_whitespace=false", "structured_outputs")  # fmt: skip
    if options.disable_additional_properties:
        raise bad_request("structured_outputs.disable_additional_properties is not supported: "
                          "set additionalProperties: false in the schema", "structured_outputs")  # fmt: skip
    return "flexible" if options.disable_any_whitespace is False else "compact"


def _structural_tag_option(value: str | dict[str, Any], label: str) -> StructuralTagSpec:
    fmt = json.loads(_schema_text(value, label)) if isinstance(value, str) else value
    if not isinstance(fmt, dict):
        raise bad_request(f"{label} must be an object", "structured_outputs")
    try:
        structures = msgspec.convert(fmt.get("structures") or [], list[StructureDef])
        triggers = msgspec.convert(fmt.get("triggers"), list[str] | None)
    except msgspec.ValidationError as exc:
        raise bad_request(f"{label}: {exc}", "structured_outputs") from None
    return _legacy_structural_tag(structures, triggers, fmt.get("format"), label)


def _spec_of(kind: str, value: Any, options: StructuredOutputsOptions) -> StructuredSpec:
    param = "structured_outputs"
    if kind == "json":
        return JsonSchemaSpec(json_schema=_schema_text(value, f"{param}.json"), whitespace=_whitespace(options))
    if kind == "json_object":
        return JsonObjectSpec(whitespace=_whitespace(options))
    if kind == "regex":
        return RegexSpec(regex=value)
    if kind == "choice":
        if not value:
            raise bad_request(f"{param}.choice must be a non-empty list of strings", param)
        return ChoiceSpec(choice=list(value))
    if kind == "grammar":  # GBNF (llama.cpp, xgrammar's EBNF) defines rules with `::=`; Lark with `:`
        return GbnfSpec(gbnf=value) if "::=" in value else LarkSpec(lark=value)
    return _structural_tag_option(value, f"{param}.structural_tag")


def from_structured_outputs(options: StructuredOutputsOptions | None) -> Constraint | None:
    """vLLM's `structured_outputs: {json | regex | choice | grammar | json_object | structural_tag}`."""
    if options is None:
        return None
    kinds = [k for k in _KINDS if getattr(options, k) not in (None, False)]
    if len(kinds) != 1:
        raise bad_request(f"structured_outputs must set exactly one of {', '.join(_KINDS)}; got {kinds or 'none'}",
                          "structured_outputs")  # fmt: skip
    return Constraint(_spec_of(kinds[0], getattr(options, kinds[0]), options), "structured_outputs")


def _guided_options(req: Any) -> StructuredOutputsOptions | None:
    """vLLM's older `guided_*` fields as `structured_outputs` (the backend choice has no meaning here)."""
    options = {key: getattr(req, f"guided_{key}") for key in _GUIDED if getattr(req, f"guided_{key}") is not None}
    if not options:
        return None
    if req.structured_outputs is not None:
        raise bad_request("guided_* fields and structured_outputs cannot both be set", "structured_outputs")
    return StructuredOutputsOptions(**options)


def request_constraint(req: Any) -> Constraint | None:
    """The one constraint a request's body asks for (chat or completions); two at once is a 400."""
    a = from_response_format(req.response_format)
    guided = _guided_options(req)
    b = from_structured_outputs(guided if guided is not None else req.structured_outputs)
    if a is not None and b is not None:
        raise bad_request("response_format and structured_outputs cannot both constrain the output", "structured_outputs")
    return a or b
