"""Chat template rendering: tools in the template or, failing that, in the system prompt; reasoning starts."""

from __future__ import annotations

import copy

import pytest

from gateway.chat_output import open_output
from gateway.parser_config import ParserConfig
from gateway.chat_template import ChatRenderer
from gateway.errors import ApiError
from schemas.openai import ChatMessage, FunctionDef, ToolDef

PLAIN_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
TOOL = ToolDef(function=FunctionDef(name="get_weather", parameters={"type": "object"}))


@pytest.fixture
def plain_tokenizer(tokenizer):
    tok = copy.deepcopy(tokenizer)
    tok.chat_template = PLAIN_TEMPLATE
    return tok


def test_tools_go_into_the_system_prompt_without_template_support(plain_tokenizer):
    renderer = ChatRenderer(plain_tokenizer)
    assert not renderer.template_supports_tools
    messages = [ChatMessage(role="system", content="Be brief."), ChatMessage(role="user", content="Hi")]
    text = renderer.render(messages, tools=[TOOL]).text
    assert text.startswith("<|im_start|>system\nBe brief.\n\nYou have access to the following tools")
    assert '"name": "get_weather"' in text
    assert '<tool_call>\n{"name": "<tool name>", "arguments": <arguments as a JSON object>}\n</tool_call>' in text
    text = renderer.render(messages[1:], tools=[TOOL]).text
    assert text.startswith("<|im_start|>system\nYou have access")


def test_the_preamble_follows_the_tool_format(plain_tokenizer):
    renderer = ChatRenderer(plain_tokenizer, "mistral")
    text = renderer.render([ChatMessage(role="user", content="Hi")], tools=[TOOL]).text
    assert "[TOOL_CALLS]<tool name>[ARGS]<arguments as a JSON object>" in text


def test_template_with_tools_gets_them_natively(tokenizer):
    renderer = ChatRenderer(tokenizer)
    assert renderer.template_supports_tools
    text = renderer.render([ChatMessage(role="user", content="Hi")], tools=[TOOL]).text
    assert "You may call tools" in text and "get_weather" in text


def test_starts_in_reasoning(plain_tokenizer):
    """A template that leaves the prompt inside the format's reasoning section: the output starts there."""
    plain_tokenizer.chat_template = PLAIN_TEMPLATE + "{% if add_generation_prompt %}<think>\n{% endif %}"
    rendered = ChatRenderer(plain_tokenizer).render([ChatMessage(role="user", content="Hi")])
    assert rendered.token_ids == plain_tokenizer.encode(rendered.text, add_special_tokens=False)
    config = ParserConfig(tool_parser=None, reasoning_parser="qwen3")
    opened = open_output(config, None, rendered.text)
    parts = [opened.feed("Let me think.", []), opened.feed("\n</think>\n\nFour.", []), opened.close()]
    assert "".join(p.reasoning for p in parts).strip() == "Let me think."
    assert "".join(p.content for p in parts).strip() == "Four."
    closed = open_output(config, None, "User: Hi\nAssistant:")
    parts = [closed.feed("Four.", []), closed.close()]
    assert "".join(p.content for p in parts) == "Four." and not "".join(p.reasoning for p in parts)


def test_template_errors_are_400(plain_tokenizer):
    plain_tokenizer.chat_template = "{{ raise_exception('roles must alternate') }}"
    with pytest.raises(ApiError) as err:
        ChatRenderer(plain_tokenizer).render([ChatMessage(role="user", content="Hi")])
    assert err.value.status == 400 and "roles must alternate" in err.value.message


def test_no_template_is_400(plain_tokenizer):
    plain_tokenizer.chat_template = None
    with pytest.raises(ApiError):
        ChatRenderer(plain_tokenizer).render([ChatMessage(role="user", content="Hi")])
