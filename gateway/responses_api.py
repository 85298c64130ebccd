"""The Responses API's request as the one internal (chat) request: input items -> chat messages,
function tools, tool_choice, text.format -> response_format. The output side is responses_output.py.

Nothing here generates, streams or constrains: the translated request goes through ChatCall
(routes_chat.py) and so through the same admission, parser and grammar as chat.
"""

from __future__ import annotations

import uuid
from typing import Any

import msgspec

from gateway.errors import bad_request
from schemas.openai import (
    ChatCompletionRequest,
    ChatMessage,
    FunctionCall,
    FunctionDef,
    ToolCall,
    ToolDef,
)
from schemas.openai_responses import InputContent, InputItem, NamedFunctionChoice, ResponsesRequest
from schemas.output_constraints import (
    JsonObjectFormat,
    JsonSchemaDef,
    JsonSchemaFormat,
    NamedFunction,
    NamedToolChoice,
    ResponseFormat,
    TextFormat,
)

# chat's field names, as the Responses API calls them (errors raised on the translated request)
PARAM_NAMES = {"messages": "input", "max_completion_tokens": "max_output_tokens", "max_tokens": "max_output_tokens",
               "response_format": "text.format", "prompt": "input", "structured": "text.format"}  # fmt: skip
_MESSAGE_ROLES = ("user", "system", "developer", "assistant")
_TEXT_PARTS = ("input_text", "output_text", "text")
_ID_PREFIX = {"message": "msg", "function_call": "fc", "function_call_output": "fco", "reasoning": "rs"}


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def input_items(req: ResponsesRequest) -> list[InputItem]:
    """The request's own input as items (a string is one user message), each with an id."""
    items = [InputItem(role="user", content=req.input)] if isinstance(req.input, str) else list(req.input)
    if not items:
        raise bad_request("input must hold at least one item", "input")
    return [item if item.id else msgspec.structs.replace(item, id=new_id(_ID_PREFIX.get(item.type, "item")))
            for item in items]  # fmt: skip


def item_dict(item: Any) -> dict[str, Any]:
    """An item as its JSON object, absent fields left out (stored and listed by input_items)."""
    return {key: value for key, value in msgspec.to_builtins(item).items() if value is not None}


def _text(parts: str | list[InputContent] | None, label: str, kinds: tuple[str, ...] = _TEXT_PARTS) -> str:
    if parts is None or isinstance(parts, str):
        return parts or ""
    for j, part in enumerate(parts):
        if part.type not in kinds or part.text is None:
            raise bad_request(f"{label}[{j}]: content part type {part.type!r} is not supported (text only)", "input")
    return "".join(part.text for part in parts)


class _Messages:
    """Builds the chat messages of a conversation, item by item: function calls join the assistant
    message before them, a reasoning item goes with the next assistant message."""

    def __init__(self) -> None:
        self.messages: list[ChatMessage] = []
        self.reasoning: str | None = None

    def _assistant(self, fresh: bool) -> ChatMessage:
        last = self.messages[-1] if self.messages else None
        if fresh or last is None or last.role != "assistant":
            last = ChatMessage(role="assistant", content=None, reasoning_content=self.reasoning)
            self.messages.append(last)
            self.reasoning = None
        return last

    def add(self, item: InputItem, label: str) -> None:
        kind = item.type
        if kind == "message":
            if item.role not in _MESSAGE_ROLES:
                raise bad_request(f"{label}.role must be one of {', '.join(_MESSAGE_ROLES)}", "input")
            text = _text(item.content, f"{label}.content")
            if item.role == "assistant":
                self._assistant(fresh=True).content = text
            else:
                self.messages.append(ChatMessage(role=item.role, content=text))
        elif kind == "function_call":
            if not item.call_id or not item.name:
                raise bad_request(f"{label}: a function_call needs call_id and name", "input")
            message = self._assistant(fresh=False)
            call = ToolCall(id=item.call_id, function=FunctionCall(name=item.name, arguments=item.arguments or "{}"))
            message.tool_calls = [*(message.tool_calls or []), call]
        elif kind == "function_call_output":
            if not item.call_id or item.output is None:
                raise bad_request(f"{label}: a function_call_output needs call_id and output", "input")
            output = _text(item.output, f"{label}.output")
            self.messages.append(ChatMessage(role="tool", tool_call_id=item.call_id, content=output))
        elif kind == "reasoning":
            parts = item.content or item.summary or []
            self.reasoning = _text(parts, f"{label}.content", ("reasoning_text", "summary_text", "text"))
        else:
            raise bad_request(f"{label}.type {kind!r} is not supported (message, function_call, "
                              "function_call_output, reasoning)", "input")  # fmt: skip


def chat_messages(instructions: str | None, history: list[InputItem], items: list[InputItem]) -> list[ChatMessage]:
    """`instructions` as the system message, then the stored conversation, then this request's items."""
    builder = _Messages()
    if instructions:
        builder.messages.append(ChatMessage(role="system", content=instructions))
    for i, item in enumerate(history):
        builder.add(item, f"previous_response_id's item {i}")
    for i, item in enumerate(items):
        builder.add(item, f"input[{i}]")
    return builder.messages


def _tools(req: ResponsesRequest) -> list[ToolDef] | None:
    if not req.tools:
        return None
    tools = []
    for i, tool in enumerate(req.tools):
        if tool.type != "function":
            raise bad_request(f"tools[{i}].type {tool.type!r} is not supported (function only)", "tools")
        if not tool.name:
            raise bad_request(f"tools[{i}].name is required", "tools")
        tools.append(ToolDef(function=FunctionDef(name=tool.name, description=tool.description,
                                                  parameters=tool.parameters, strict=tool.strict)))  # fmt: skip
    return tools


def _tool_choice(choice: str | NamedFunctionChoice | None) -> Any:
    if not isinstance(choice, NamedFunctionChoice):
        return choice
    if choice.type != "function" or not choice.name:
        raise bad_request("tool_choice must be none, auto, required or {\"type\": \"function\", \"name\": ...}",
                          "tool_choice")  # fmt: skip
    return NamedToolChoice(function=NamedFunction(name=choice.name))


def response_format(req: ResponsesRequest) -> ResponseFormat | None:
    fmt = req.text.format if req.text is not None else None
    if fmt is None or fmt.type == "text":
        return TextFormat() if fmt is not None else None
    if fmt.type == "json_object":
        return JsonObjectFormat()
    if fmt.type == "json_schema":
        if fmt.schema is None:
            raise bad_request("text.format.schema is required for json_schema", "text.format")
        return JsonSchemaFormat(json_schema=JsonSchemaDef(schema=fmt.schema, name=fmt.name, strict=fmt.strict,
                                                          description=fmt.description))  # fmt: skip
    raise bad_request(f"text.format.type {fmt.type!r} is not supported (text, json_object, json_schema)", "text.format")


def chat_request(req: ResponsesRequest, history: list[InputItem], items: list[InputItem]) -> ChatCompletionRequest:
    """The internal request for `req` continuing `history` (the stored conversation, if any)."""
    if req.background:
        raise bad_request("background responses are not supported", "background")
    kwargs = {}
    if req.reasoning is not None and req.reasoning.effort is not None:
        kwargs["chat_template_kwargs"] = {"enable_thinking": req.reasoning.effort != "none"}
    return ChatCompletionRequest(
        messages=chat_messages(req.instructions, history, items),
        model=req.model,
        max_completion_tokens=req.max_output_tokens,
        temperature=req.temperature,
        top_p=req.top_p,
        top_k=req.top_k,
        seed=req.seed,
        stop=req.stop,
        tools=_tools(req),
        tool_choice=_tool_choice(req.tool_choice),
        parallel_tool_calls=req.parallel_tool_calls,
        response_format=response_format(req),
        stream=req.stream,
        user=req.user,
        **kwargs,
    )
