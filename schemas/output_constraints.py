"""The request fields that constrain output, as typed wire structs: `response_format` (OpenAI),
`structured_outputs` (vLLM) and a named `tool_choice`.

Tagged unions: a wrong `type`, a missing or mistyped field, or an unknown `structured_outputs`
option fails decoding, which the gateway answers with a 400 naming the field's path.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

# --- response_format: {"type": "text" | "json_object" | "json_schema" | "structural_tag", ...}


class JsonSchemaDef(msgspec.Struct, kw_only=True):
    schema: dict[str, Any]
    name: str | None = None
    description: str | None = None
    strict: bool | None = None


class StructureDef(msgspec.Struct, kw_only=True):
    """vLLM's legacy structural tag: text `begin`, then JSON matching `schema`, then `end`."""

    begin: str
    end: str
    schema: dict[str, Any] | bool | None = None
    parameters: dict[str, Any] | None = None  # accepted as a synonym of `schema`


class _Format(msgspec.Struct, kw_only=True, tag_field="type"):
    pass


class TextFormat(_Format, tag="text"):
    pass


class JsonObjectFormat(_Format, tag="json_object"):
    pass


class JsonSchemaFormat(_Format, tag="json_schema"):
    json_schema: JsonSchemaDef


class StructuralTagFormat(_Format, tag="structural_tag"):
    structures: list[StructureDef] | None = None
    triggers: list[str] | None = None
    format: Any = None  # the newer form; refused with a clear 400 rather than ignored


ResponseFormat = TextFormat | JsonObjectFormat | JsonSchemaFormat | StructuralTagFormat


# --- structured_outputs (vLLM): exactly one of the constraint keys, and options


class StructuredOutputsOptions(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    json: str | dict[str, Any] | bool | None = None  # a schema object or its JSON text
    regex: str | None = None
    choice: list[str] | None = None
    grammar: str | None = None  # GBNF (rules with `::=`) or Lark
    json_object: bool | None = None
    structural_tag: str | dict[str, Any] | None = None
    disable_fallback: bool | None = None  # no meaning here: there is no other backend to fall back to
    whitespace_pattern: str | None = None
    disable_any_whitespace: bool | None = None
    disable_additional_properties: bool | None = None


# --- tool_choice: "none" | "auto" | "required" | {"type": "function", "function": {"name": ...}}


class NamedFunction(msgspec.Struct, kw_only=True):
    name: str


class NamedToolChoice(msgspec.Struct, kw_only=True):
    function: NamedFunction
    type: Literal["function"] = "function"


ToolChoice = Literal["none", "auto", "required"] | NamedToolChoice
