"""The public API: names, errors, event shapes, call syntax data and format detection."""
from __future__ import annotations

import pytest

import parsing

ALL = ["hermes", "qwen3", "qwen3_coder", "llama3_json", "mistral", "mistral_legacy", "deepseek_r1",
       "deepseek_v3", "deepseek_v31", "deepseek_v32", "deepseek_v4", "kimi_k2", "glm45", "glm47",
       "minimax_m2", "seed_oss", "gpt_oss",
       "pythonic", "llama4_pythonic", "olmo3", "llama4_json", "granite", "granite_20b_fc", "internlm",
       "jamba", "xlam", "phi4_mini_json", "hunyuan_a13b", "step3", "step3p5", "ernie45", "longcat",
       "qwen3_xml", "gigachat3", "apertus", "minimax_m2_append_think", "lfm2", "cohere_command3",
       "cohere_command4", "mimo", "nemotron_v3", "gemma4", "functiongemma", "granite4"]

SMOLLM2_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
    "<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
TOOLS_CHATML = SMOLLM2_TEMPLATE + "{% if tools %}<tools>{{ tools }}</tools> Reply with <tool_call>{...}</tool_call>{% endif %}"


def test_formats_are_exactly_the_issue_names() -> None:
    assert parsing.formats() == ALL


def test_unknown_format_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown parser format"):
        parsing.open_stream("nope")
    with pytest.raises(ValueError):
        parsing.parse("x", "nope")


def test_feed_after_close_raises_and_close_is_idempotent() -> None:
    s = parsing.open_stream("hermes")
    assert s.feed("hi") == [parsing.ContentDelta("hi")]
    assert s.close() == []
    assert s.close() == []
    with pytest.raises(RuntimeError):
        s.feed("more")


def test_events_are_small_slotted_objects() -> None:
    s = parsing.open_stream("qwen3")
    events = s.feed('<think>r</think>c<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>') + s.close()
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["ReasoningDelta", "ContentDelta", "ToolCallStart", "ToolCallArgs"]
    assert all(not hasattr(e, "__dict__") for e in events)
    start = events[2]
    assert (start.index, start.name) == (0, "f") and start.id.startswith("call_")
    assert events[3] == parsing.ToolCallArgs(0, '{"a": 1}')


def test_marker_prefix_is_held_then_released() -> None:
    s = parsing.open_stream("qwen3")
    assert s.feed("Hello <tool") == [parsing.ContentDelta("Hello")]
    assert s.num_held == len("<tool")
    assert s.feed("s are fun") == [parsing.ContentDelta(" <tools are fun")]
    assert s.num_held == 0


def test_name_is_not_sent_before_it_is_complete() -> None:
    s = parsing.open_stream("glm47")
    assert s.feed("<tool_call>get") == []
    events = s.feed("_weather<arg_key>")
    assert [e.name for e in events if isinstance(e, parsing.ToolCallStart)] == ["get_weather"]


def test_typed_value_sent_only_when_its_end_is_known() -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"n": {"type": "integer"}}}}}]
    s = parsing.open_stream("qwen3_coder", tools)
    s.feed("<tool_call>\n<function=f>\n<parameter=n>\n12")
    assert s.feed("3\n</parameter>") == []
    args = [e.text for e in s.feed("\n</function>") if isinstance(e, parsing.ToolCallArgs)]
    assert "".join(args) == '"n": 123}'


@pytest.mark.parametrize("fmt", ALL)
def test_call_syntax_is_plain_data(fmt: str) -> None:
    syntax = parsing.call_syntax(fmt)
    assert isinstance(syntax, dict)
    assert syntax["args"] in ("json", "xml")
    assert "{name}" in syntax["begin"] and isinstance(syntax["end"], str) and syntax["trigger"]


@pytest.mark.parametrize("template,tokens,want", [
    (SMOLLM2_TEMPLATE, ["<|im_start|>", "<|im_end|>"], "hermes"),
    (TOOLS_CHATML, [], "hermes"),
    (TOOLS_CHATML + "<think>", [], "qwen3"),
    ("{{ '<tool_call>\\n<function=' }}<parameter=", [], "qwen3_coder"),
    ("x", ["[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"], "mistral"),
    ("x", ["[TOOL_CALLS]"], "mistral_legacy"),
    ("<|start_header_id|>{{ 'parameters' }}<|python_tag|>", [], "llama3_json"),
    ("<｜Assistant｜><think>", ["<｜tool▁calls▁begin｜>", "```json"], "deepseek_v3"),
    ("<｜Assistant｜><think>", ["<｜tool▁calls▁begin｜>"], "deepseek_v31"),
    ("<｜DSML｜function_calls>", [], "deepseek_v32"),
    ("<｜DSML｜tool_calls>", [], "deepseek_v4"),
    ("<｜Assistant｜><think>", [], "deepseek_r1"),
    ("x", ["<|tool_calls_section_begin|>"], "kimi_k2"),
    ("<arg_key>{{ k }}</arg_key>\\n<arg_value>{{ v }}</arg_value>\\n", [], "glm45"),
    ("<arg_key>{{ k }}</arg_key><arg_value>{{ v }}</arg_value>", [], "glm47"),
    ("]~b]ai<minimax:tool_call>", [], "minimax_m2"),
    ("<seed:think>", [], "seed_oss"),
    ("<|start|>assistant<|channel|>final<|message|>", [], "gpt_oss"),
    ("plain {{ content }}", [], None),
])
def test_detect_format(template: str, tokens: list[str], want: str | None) -> None:
    assert parsing.detect_format(template, tokens) == want


def test_reasoning_tags() -> None:
    assert parsing.reasoning_tags("qwen3") == ("<think>", "</think>")
    assert parsing.reasoning_tags("seed_oss") == ("<seed:think>", "</seed:think>")
    assert parsing.reasoning_tags("hermes") == ("<scratch_pad>", "</scratch_pad>")
    assert parsing.reasoning_tags("gpt_oss") is None


@pytest.mark.parametrize("fmt", ["qwen3", "qwen3_coder", "kimi_k2", "llama3_json"])
def test_calls_false_keeps_markup_as_content(fmt: str) -> None:
    syn = parsing.call_syntax(fmt)
    call = syn.get("block_begin", "") + syn["begin"].replace("{name}", "f").replace("{index}", "0")
    text = "Hi." + call if fmt != "llama3_json" else call
    parsed = parsing.parse(text, fmt, calls=False)
    assert parsed.tool_calls == [] and parsed.content == text.rstrip()
    assert parsing.parse("<think>r</think>x", "qwen3", calls=False).reasoning == "r"


def test_tools_as_structs_type_values_and_num_calls() -> None:
    import msgspec

    class Function(msgspec.Struct):
        name: str
        parameters: dict

    class Tool(msgspec.Struct):
        function: Function
        type: str = "function"

    tools = [Tool(Function("f", {"type": "object", "properties": {"n": {"type": "integer"}}}))]
    s = parsing.open_stream("glm47", tools)
    events = s.feed("<tool_call>f<arg_key>n</arg_key><arg_value>7</arg_value></tool_call>") + s.close()
    assert s.num_calls == 1
    assert parsing.collect(events).tool_calls[0].arguments == '{"n": 7}'
