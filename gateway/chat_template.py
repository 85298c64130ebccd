"""Chat messages -> prompt token ids through the model's own Jinja chat template."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import parsing
from gateway.errors import bad_request
from schemas.openai import ChatMessage, ToolDef

ROLES = ("system", "developer", "user", "assistant", "tool")
_HERMES_CALL = '<tool_call>\n{"name": "<tool name>", "arguments": <arguments as a JSON object>}\n</tool_call>'


def tools_preamble(tool_format: str | None) -> str:
    """The system-prompt text that teaches a template-less model the server's call syntax."""
    example = _HERMES_CALL
    if tool_format:
        syntax = parsing.call_syntax(tool_format)
        if syntax and syntax.get("args") == "json" and "{index}" not in syntax["begin"]:
            example = syntax["begin"].replace("{name}", "<tool name>") + "<arguments as a JSON object>" + syntax["end"]
    return f"You have access to the following tools. To call one, answer with {example}\nTools:\n"


@dataclass(frozen=True, slots=True)
class RenderedPrompt:
    text: str
    token_ids: list[int]


def _content_text(message: ChatMessage, index: int) -> str:
    content = message.content
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    texts = []
    for part in content:
        if part.type not in ("text", "input_text") or part.text is None:
            raise bad_request(
                f"messages[{index}]: content part type {part.type!r} is not supported (text only)",
                "messages",
            )
        texts.append(part.text)
    return "".join(texts)


def _tool_call_dict(call: Any) -> dict[str, Any]:
    arguments = call.function.arguments
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            pass  # keep the text: templates that write it verbatim still work
    return {"id": call.id, "type": "function", "function": {"name": call.function.name, "arguments": arguments}}


def message_dicts(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """The request's messages as the plain dicts chat templates expect."""
    if not messages:
        raise bad_request("messages must hold at least one message", "messages")
    out = []
    for i, message in enumerate(messages):
        if message.role not in ROLES:
            raise bad_request(f"messages[{i}].role must be one of {', '.join(ROLES)}", "messages")
        item: dict[str, Any] = {
            "role": "system" if message.role == "developer" else message.role,
            "content": _content_text(message, i),
        }
        if message.name is not None:
            item["name"] = message.name
        if message.tool_calls:
            item["tool_calls"] = [_tool_call_dict(call) for call in message.tool_calls]
        if message.tool_call_id is not None:
            item["tool_call_id"] = message.tool_call_id
        reasoning = message.reasoning_content or message.reasoning
        if reasoning is not None:
            item["reasoning_content"] = reasoning
        out.append(item)
    return out


def tool_dicts(tools: list[ToolDef] | None) -> list[dict[str, Any]] | None:
    if not tools:
        return None
    out = []
    for tool in tools:
        if tool.type != "function":
            raise bad_request(f"tools: type {tool.type!r} is not supported (function only)", "tools")
        function: dict[str, Any] = {"name": tool.function.name}
        if tool.function.description is not None:
            function["description"] = tool.function.description
        function["parameters"] = tool.function.parameters or {"type": "object", "properties": {}}
        out.append({"type": "function", "function": function})
    return out


def _tools_in_system_prompt(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]], preamble: str
) -> list[dict[str, Any]]:
    """For templates that know nothing of tools: the tool list goes into the system message."""
    listing = "\n".join(json.dumps(tool["function"], ensure_ascii=False) for tool in tools)
    text = preamble + listing
    if messages and messages[0]["role"] == "system":
        first = dict(messages[0], content=messages[0]["content"] + "\n\n" + text)
        return [first, *messages[1:]]
    return [{"role": "system", "content": text}, *messages]


class ChatRenderer:
    """Renders chat requests for one tokenizer; built once at startup, called by the chat and tokenize routes."""

    def __init__(self, tokenizer: Any, tool_format: str | None = None) -> None:
        self.tokenizer = tokenizer
        self.tools_preamble = tools_preamble(tool_format)
        template = getattr(tokenizer, "chat_template", None) or ""
        self.has_template = bool(template)
        self.template_supports_tools = "tools" in template

    def render(
        self,
        messages: list[ChatMessage],
        *,
        tools: list[ToolDef] | None = None,
        add_generation_prompt: bool | None = None,
        continue_final_message: bool | None = None,
        template_kwargs: dict[str, Any] | None = None,
    ) -> RenderedPrompt:
        conversation = message_dicts(messages)
        tool_list = tool_dicts(tools)
        if tool_list and not self.template_supports_tools:
            conversation, tool_list = _tools_in_system_prompt(conversation, tool_list, self.tools_preamble), None
        cont = bool(continue_final_message)
        add_gen = (not cont) if add_generation_prompt is None else add_generation_prompt
        if cont and add_gen:
            raise bad_request(
                "continue_final_message and add_generation_prompt cannot both be true", "continue_final_message"
            )
        if cont and conversation[-1]["role"] != "assistant":
            raise bad_request("continue_final_message needs a final assistant message", "continue_final_message")
        text = self._apply(conversation, tool_list, add_gen, cont, template_kwargs or {})
        token_ids = self.tokenizer.encode(text, add_special_tokens=False)
        return RenderedPrompt(text=text, token_ids=token_ids)

    def _apply(self, conversation, tools, add_gen: bool, cont: bool, kwargs: dict[str, Any]) -> str:
        if not self.has_template:
            raise bad_request("this model has no chat template; use /v1/completions", "messages")
        reserved = {"conversation", "tools", "tokenize", "add_generation_prompt", "continue_final_message"}
        extra = {k: v for k, v in kwargs.items() if k not in reserved}
        try:
            return self.tokenizer.apply_chat_template(
                conversation,
                tools=tools,
                tokenize=False,
                add_generation_prompt=add_gen,
                continue_final_message=cont,
                **extra,
            )
        except Exception as exc:  # a template's raise_exception() or a Jinja error: the request's fault
            raise bad_request(f"chat template error: {exc}", "messages") from exc
