"""Tool calls as a structural-tag constraint, from the tool-call syntax of the server's parsing format.

- tool_choice "required" or a named function: the model must write one or more calls (one
  for a named function), each valid against its tool's parameter schema.
- tool_choice "auto" with tools marked `strict: true`: the model writes free text, but once
  it writes the opening of a call to a strict tool, the arguments must match that tool's schema.
"""

from __future__ import annotations

import json
from typing import Any

import parsing
from gateway.errors import bad_request
from gateway.structured_request import Constraint
from schemas.engine import StructuralTagSpec
from schemas.openai import ChatCompletionRequest
from schemas.output_constraints import NamedToolChoice


def forced_tools(req: ChatCompletionRequest) -> list[Any] | None:
    """The tools the model must call from, or None when tool_choice leaves it free."""
    choice = req.tool_choice
    if choice == "required":
        return list(req.tools or [])
    if isinstance(choice, NamedToolChoice):
        name = choice.function.name
        return [tool for tool in req.tools or [] if tool.function.name == name]
    return None


def _strict_tools(req: ChatCompletionRequest) -> list[Any]:
    if req.tool_choice == "none":
        return []
    return [tool for tool in req.tools or [] if tool.function.strict]


def _syntax(tool_format: str | None, what: str, param: str) -> dict[str, Any]:
    if not tool_format:
        raise bad_request(f"{what} needs a tool-call format, and none was detected for this model: start the "
                          "server with --tool-parser NAME", param)  # fmt: skip
    syntax = parsing.call_syntax(tool_format)
    if not syntax:
        raise bad_request(f"{what} is not supported for the {tool_format} format (it has no tool calls)", param)
    return syntax


def tool_call_spec(req: ChatCompletionRequest, tool_format: str | None) -> Constraint | None:
    """The structural tag for the request's tools in `tool_format`'s syntax, or None when nothing is constrained."""
    tools = forced_tools(req)
    forced = tools is not None
    if not forced:
        tools = _strict_tools(req)
        if not tools or not tool_format:  # no format: the tools are in the prompt, the reply is content
            return None
    what, param = ("tool_choice required or named", "tool_choice") if forced else ("strict: true", "tools")
    syntax = _syntax(tool_format, what, param)
    # Every call gets the format's block around it: formats with one block per call (qwen3-coder)
    # repeat it; formats whose block holds all calls (deepseek) are then held to one call.
    block_begin, block_end = syntax.get("block_begin", ""), syntax.get("block_end", "")
    one_block = bool(block_begin) and not syntax.get("block_per_call")
    xml = {"begin": syntax["param_begin"], "end": syntax["param_end"]} if syntax["args"] == "xml" else None
    if forced:
        single = isinstance(req.tool_choice, NamedToolChoice) or req.parallel_tool_calls is False or one_block
        spec: dict[str, Any] = {"min_calls": 1, **({"max_calls": 1} if single else {})}
    else:  # calls to tools without `strict` are not in the grammar: the output stream drops extra calls
        single = req.parallel_tool_calls is False
        spec = {"allow_free_text": True, "min_calls": 0, **({"max_calls": 1} if single else {})}
    begin = syntax["begin"]
    if "{index}" in begin:  # kimi numbers its calls: known only when there is just one
        if not single:
            raise bad_request(f"{what} for the {tool_format} format needs parallel_tool_calls: false (its calls "
                              f"are numbered)", param)  # fmt: skip
        begin = begin.replace("{index}", "0")
    alternatives = []
    for tool in tools:
        alternative = {
            "begin": block_begin + begin.replace("{name}", tool.function.name),
            "schema": tool.function.parameters or {"type": "object"},
            "end": syntax["end"] + block_end,
        }
        if xml:
            alternative["xml_params"] = xml
        alternatives.append(alternative)
    spec.update(alternatives=alternatives, separator=syntax.get("separator", ""))
    return Constraint(StructuralTagSpec(structural_tag=json.dumps(spec, ensure_ascii=False)), param)
