"""Corpus: JSON-argument formats (hermes, qwen3, llama3_json, mistral, mistral_legacy)."""
from __future__ import annotations

from tests.parsing.cases import Case

W = "get_weather"
CODE = 'print("</tool_call>") if x else {"a": "}"}'

HERMES = [
    Case("hermes", "plain", "Hello! How can I help you today?", content="Hello! How can I help you today?"),
    Case("hermes", "scratch_pad",
         "<scratch_pad>\nUser wants the time.\n</scratch_pad>\n<tool_call>\n"
         '{"name": "get_time", "arguments": {}}\n</tool_call>',
         reasoning="User wants the time.", calls=(("get_time", {}),)),
    Case("hermes", "end_token_dropped", "Hi there.<|im_end|>", content="Hi there."),
    Case("hermes", "list_in_block",
         '<tool_call>\n[{"name": "get_time", "arguments": {}}, {"name": "get_weather", "arguments": {"city": "X"}}]\n</tool_call>',
         calls=(("get_time", {}), (W, {"city": "X"}))),
    Case("hermes", "one_call",
         'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>',
         content="Let me check.", calls=((W, {"city": "Paris", "days": 3}),)),
    Case("hermes", "parallel",
         '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
         '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich 東京 🌧️"}}\n</tool_call>',
         calls=((W, {"city": "Paris"}), (W, {"city": "Zürich 東京 🌧️"}))),
    Case("hermes", "no_args",
         '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>\n<tool_call>\n{"name": "get_time"}\n</tool_call>',
         calls=(("get_time", {}), ("get_time", {}))),
    Case("hermes", "markers_in_strings",
         '<tool_call>\n{"name": "run_code", "arguments": {"code": "print(\\"</tool_call>\\") if x else {\\"a\\": \\"}\\"}", '
         '"args": ["<tool_call>", "\\\\", "\\u00e9"], "limit": null, "verbose": true, "timeout": -1.5e3}}\n</tool_call>',
         calls=(("run_code", {"code": CODE, "args": ["<tool_call>", "\\", "é"], "limit": None,
                              "verbose": True, "timeout": -1500.0}),)),
    Case("hermes", "truncated_args",
         'On it.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par',
         content="On it.", calls=((W, {"city": "Par"}),)),
    Case("hermes", "truncated_number",
         '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 1',
         calls=((W, {"city": "Paris", "days": 1}),)),
    Case("hermes", "truncated_after_comma",
         '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", ',
         calls=((W, {"city": "Paris"}),)),
    Case("hermes", "truncated_before_name", 'Sure<tool_call>\n{"na', content="Sure"),
    Case("hermes", "bare_json_is_content", '{"name": "get_weather", "arguments": {"city": "Paris"}}',
         content='{"name": "get_weather", "arguments": {"city": "Paris"}}'),
    Case("hermes", "arguments_before_name",
         '<tool_call>{"arguments": {"a": [1, {"b": null}]}, "name": "f"}</tool_call>',
         calls=(("f", {"a": [1, {"b": None}]}),)),
    Case("hermes", "not_json_is_content", "<tool_call>\nnot json\n</tool_call> after",
         content="not json\n after"),
    Case("hermes", "string_encoded_args",
         '<tool_call>\n{"name": "f", "arguments": "{\\"a\\": 1}"}\n</tool_call>', calls=(("f", {"a": 1}),)),
    Case("hermes", "text_after_call",
         '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>\nDone.',
         content="Done.", calls=(("get_time", {}),)),
    Case("hermes", "text_around_call",
         'Checking.\n<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>\nDone.\n',
         content="Checking.\nDone.", calls=(("get_time", {}),)),
]

QWEN3 = [
    Case("qwen3", "reasoning_content", "<think>\nThe user greets me.\n</think>\n\nHello there!",
         reasoning="The user greets me.", content="Hello there!"),
    Case("qwen3", "reasoning_call",
         '<think>\nI could write <tool_call>{"name": "x"}</tool_call> but first think.\n</think>\n\n'
         '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
         reasoning='I could write <tool_call>{"name": "x"}</tool_call> but first think.',
         calls=((W, {"city": "Paris"}),)),
    Case("qwen3", "starts_in_reasoning", "Let me think.\n</think>\n\nThe answer is 4.",
         reasoning="Let me think.", content="The answer is 4.", starts_in_reasoning=True),
    Case("qwen3", "duplicate_open", "<think>\nHmm.\n</think>\n\nOK.", reasoning="Hmm.", content="OK.",
         starts_in_reasoning=True),
    Case("qwen3", "truncated_reasoning", "Still thinking about </thi", reasoning="Still thinking about </thi",
         starts_in_reasoning=True),
    Case("qwen3", "only_open_tag", "<think>\nI am", reasoning="I am"),
    Case("qwen3", "empty_reasoning", "<think>\n\n</think>\n\nHi!", content="Hi!"),
    Case("qwen3", "second_close_dropped", "<think>a</think>b</think>c", reasoning="a", content="bc"),
    Case("qwen3", "no_think", "Just an answer with a <b>tag</b>.", content="Just an answer with a <b>tag</b>."),
    Case("qwen3", "two_calls_and_text",
         '<think>\nTwo cities.\n</think>\n\nChecking both.\n<tool_call>\n{"name": "get_weather", "arguments": '
         '{"city": "A"}}\n</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "B"}}\n</tool_call>',
         reasoning="Two cities.", content="Checking both.", calls=((W, {"city": "A"}), (W, {"city": "B"}))),
]

LLAMA3 = [
    Case("llama3_json", "one_call", '{"name": "get_weather", "parameters": {"city": "Paris"}}',
         calls=((W, {"city": "Paris"}),)),
    Case("llama3_json", "python_tag_two",
         '<|python_tag|>{"name": "get_weather", "parameters": {"city": "A"}}; '
         '{"name": "get_time", "parameters": {}}<|eom_id|>',
         calls=((W, {"city": "A"}), ("get_time", {}))),
    Case("llama3_json", "content", "The weather is nice {today}.", content="The weather is nice {today}."),
    Case("llama3_json", "json_answer_is_content", '{"answer": 42}', content='{"answer": 42}'),
    Case("llama3_json", "newline_separated",
         '{"name": "get_time", "arguments": {}}\n{"name": "get_weather", "parameters": {"city": "}{"}}',
         calls=(("get_time", {}), (W, {"city": "}{"}))),
    Case("llama3_json", "truncated", '{"name": "get_weather", "parameters": {"city": "Pa',
         calls=((W, {"city": "Pa"}),)),
]

MISTRAL = [
    Case("mistral", "one_call", '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}', calls=((W, {"city": "Paris"}),)),
    Case("mistral", "parallel",
         'Let me look.[TOOL_CALLS]get_weather[ARGS]{"city": "[ARGS]"}[TOOL_CALLS]get_time[ARGS]{}',
         content="Let me look.", calls=((W, {"city": "[ARGS]"}), ("get_time", {}))),
    Case("mistral", "call_id", '[TOOL_CALLS]get_time[CALL_ID]a1B2c3D4e[ARGS]{}',
         calls=(("get_time", {}),), ids=("a1B2c3D4e",)),
    Case("mistral", "think", "[THINK]Need the time.[/THINK]It is late.[TOOL_CALLS]get_time[ARGS]{}",
         reasoning="Need the time.", content="It is late.", calls=(("get_time", {}),)),
    Case("mistral", "truncated", '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "days": 2',
         calls=((W, {"city": "Paris", "days": 2}),)),
    Case("mistral", "content", "No tools [needed] here.", content="No tools [needed] here."),
]

MISTRAL_LEGACY = [
    Case("mistral_legacy", "array",
         '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}}, '
         '{"id": "ab12cd34e", "name": "get_time", "arguments": {}}]',
         calls=((W, {"city": "Paris"}), ("get_time", {})), ids=(None, "ab12cd34e")),
    Case("mistral_legacy", "no_space", '[TOOL_CALLS][{"name": "get_time", "arguments": {}}]',
         calls=(("get_time", {}),)),
    Case("mistral_legacy", "content", "Plain [answer].", content="Plain [answer]."),
    Case("mistral_legacy", "bracket_in_string",
         '[TOOL_CALLS] [{"name": "run_code", "arguments": {"code": "a = [1, 2]]"}}]',
         calls=(("run_code", {"code": "a = [1, 2]]"}),)),
    Case("mistral_legacy", "truncated", '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"ci',
         calls=((W, {"ci": None}),)),
]

CASES = HERMES + QWEN3 + LLAMA3 + MISTRAL + MISTRAL_LEGACY
