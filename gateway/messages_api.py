"""The Anthropic Messages API's request as the one internal (chat) request: system and content blocks
-> chat messages, tools with input_schema, tool_choice auto / any / tool / none, stop_sequences,
thinking. The output side is messages_output.py.

Nothing here generates, streams or constrains: the translated request goes through ChatCall
(routes_chat.py) and so through the same admission, parser and grammar as chat.
"""

from __future__ import annotations

import json
from typing import Any

from gateway.errors import bad_request
from schemas.anthropic import (
    AnyChoice,
    CountTokensRequest,
    ImageBlock,
    MessagesRequest,
    NoneChoice,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolChoiceTool,
    ToolResultBlock,
    ToolUseBlock,
)
from schemas.openai import ChatCompletionRequest, ChatMessage, FunctionCall, FunctionDef, ToolCall, ToolDef
from schemas.output_constraints import NamedFunction, NamedToolChoice

# chat's field names, as the Messages API calls them (errors raised on the translated request)
PARAM_NAMES = {"max_completion_tokens": "max_tokens", "stop": "stop_sequences", "prompt": "messages",
               "structured": "tool_choice"}  # fmt: skip


def _system(system: str | list[TextBlock] | None) -> list[ChatMessage]:
    if not system:
        return []
    text = system if isinstance(system, str) else "\n\n".join(block.text for block in system)
    return [ChatMessage(role="system", content=text)]


def _result_text(block: ToolResultBlock, label: str) -> str:
    content = block.content
    if content is None or isinstance(content, str):
        text = content or ""
    else:
        if any(isinstance(part, ImageBlock) for part in content):
            raise bad_request(f"{label}.content: image blocks are not supported (text models)", "messages")
        text = "".join(part.text for part in content)
    return f"Error: {text}" if block.is_error else text


def _user(blocks: list[Any], label: str) -> list[ChatMessage]:
    """Tool results become tool messages (first, as Anthropic requires them first), the text one user message."""
    messages, texts = [], []
    for j, block in enumerate(blocks):
        where = f"{label}.content[{j}]"
        if isinstance(block, TextBlock):
            texts.append(block.text)
        elif isinstance(block, ToolResultBlock):
            messages.append(ChatMessage(role="tool", tool_call_id=block.tool_use_id, content=_result_text(block, where)))
        else:
            raise bad_request(f"{where}: a user message takes text and tool_result blocks, not {_kind(block)}",
                              "messages")  # fmt: skip
    if texts or not messages:
        messages.append(ChatMessage(role="user", content="".join(texts)))
    return messages


def _assistant(blocks: list[Any], label: str) -> ChatMessage:
    texts, reasoning, calls = [], [], []
    for j, block in enumerate(blocks):
        if isinstance(block, TextBlock):
            texts.append(block.text)
        elif isinstance(block, ThinkingBlock):
            reasoning.append(block.thinking)
        elif isinstance(block, ToolUseBlock):
            arguments = json.dumps(block.input, ensure_ascii=False)
            calls.append(ToolCall(id=block.id, function=FunctionCall(name=block.name, arguments=arguments)))
        elif not isinstance(block, RedactedThinkingBlock):  # redacted thinking has no text to pass back
            raise bad_request(f"{label}.content[{j}]: an assistant message takes text, thinking and tool_use "
                              f"blocks, not {_kind(block)}", "messages")  # fmt: skip
    return ChatMessage(role="assistant", content="".join(texts) if texts else None,
                       reasoning_content="".join(reasoning) or None, tool_calls=calls or None)  # fmt: skip


def _kind(block: Any) -> str:
    return type(block).__struct_config__.tag


def chat_messages(req: MessagesRequest | CountTokensRequest) -> list[ChatMessage]:
    if not req.messages:
        raise bad_request("messages must hold at least one message", "messages")
    messages = _system(req.system)
    for i, message in enumerate(req.messages):
        blocks = [TextBlock(text=message.content)] if isinstance(message.content, str) else message.content
        if message.role == "user":
            messages += _user(blocks, f"messages[{i}]")
        else:
            messages.append(_assistant(blocks, f"messages[{i}]"))
    return messages


def _tools(req: MessagesRequest | CountTokensRequest) -> list[ToolDef] | None:
    if not req.tools:
        return None
    tools = []
    for i, tool in enumerate(req.tools):
        if tool.type not in (None, "custom"):
            raise bad_request(f"tools[{i}].type {tool.type!r} is not supported (custom tools with an input_schema "
                              "only)", "tools")  # fmt: skip
        schema = tool.input_schema if tool.input_schema is not None else {"type": "object", "properties": {}}
        tools.append(ToolDef(function=FunctionDef(name=tool.name, description=tool.description, parameters=schema)))
    return tools


def _tool_choice(req: MessagesRequest | CountTokensRequest) -> tuple[Any, bool | None]:
    """Chat's tool_choice and parallel_tool_calls for Anthropic's tool_choice."""
    choice = req.tool_choice
    if choice is None:
        return None, None
    parallel = False if choice.disable_parallel_tool_use else None
    if isinstance(choice, AnyChoice):
        return "required", parallel
    if isinstance(choice, ToolChoiceTool):
        return NamedToolChoice(function=NamedFunction(name=choice.name)), parallel
    if isinstance(choice, NoneChoice):
        return "none", parallel
    return "auto", parallel


def chat_request(req: MessagesRequest | CountTokensRequest) -> ChatCompletionRequest:
    """The internal request for `req` (count_tokens renders the same prompt)."""
    tool_choice, parallel = _tool_choice(req)
    kwargs: dict[str, Any] = {}
    if req.thinking is not None:
        kwargs["chat_template_kwargs"] = {"enable_thinking": req.thinking.type != "disabled"}
    if isinstance(req, MessagesRequest):
        if req.max_tokens < 1:
            raise bad_request("max_tokens must be at least 1", "max_tokens")
        kwargs.update(max_completion_tokens=req.max_tokens, temperature=req.temperature, top_p=req.top_p,
                      top_k=req.top_k, stop=req.stop_sequences or None, stream=req.stream)  # fmt: skip
    messages = chat_messages(req)
    last = messages[-1]
    if last.role == "assistant" and last.content and not last.tool_calls:  # a prefill: the reply continues it
        kwargs.update(continue_final_message=True, add_generation_prompt=False)
    return ChatCompletionRequest(messages=messages, model=req.model, tools=_tools(req), tool_choice=tool_choice,
                                 parallel_tool_calls=parallel, **kwargs)  # fmt: skip
