"""tool_choice "required" or a named function as a structural-tag constraint, from the format's call syntax."""

from __future__ import annotations

import json
from typing import Any

from gateway.errors import bad_request
from schemas.engine import StructuredSpec
from schemas.openai import ChatCompletionRequest


def forced_tools(req: ChatCompletionRequest) -> list[Any] | None:
    """The tools the model must call from, or None when tool_choice leaves it free."""
    choice = req.tool_choice
    if choice == "required":
        return list(req.tools or [])
    if isinstance(choice, dict):
        name = choice["function"]["name"]
        return [tool for tool in req.tools or [] if tool.function.name == name]
    return None


def tool_call_spec(req: ChatCompletionRequest, tool_format: str | None) -> StructuredSpec | None:
    """A structural tag that makes the model write one or more calls (one for a named function)
    in `tool_format`'s own syntax, arguments valid against each tool's JSON schema."""
    tools = forced_tools(req)
    if tools is None:
        return None
    if not tool_format:
        raise bad_request("tool_choice required or named needs a server started with --tool-parser", "tool_choice")
    import parsing

    syntax = parsing.call_syntax(tool_format)
    if not syntax or syntax.get("args") != "json" or "{index}" in syntax["begin"]:
        raise bad_request(f"tool_choice required or named is not supported for the {tool_format} format", "tool_choice")
    alternatives = [
        {
            "begin": syntax["begin"].replace("{name}", tool.function.name),
            "schema": tool.function.parameters or {"type": "object"},
            "end": syntax["end"],
        }
        for tool in tools
    ]
    spec: dict[str, Any] = {"alternatives": alternatives, "separator": syntax.get("separator", ""), "min_calls": 1}
    if isinstance(req.tool_choice, dict) or req.parallel_tool_calls is False:
        spec["max_calls"] = 1
    return StructuredSpec(structural_tag=json.dumps(spec, ensure_ascii=False))
