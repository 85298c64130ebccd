"""Corpus: JSON calls in lists or tags (llama4_json, granite, granite4, granite_20b_fc, internlm, jamba, xlam,
phi4_mini_json, hunyuan_a13b, ernie45, longcat, gigachat3, apertus)."""
from __future__ import annotations

from tests.parsing.cases import Case

W = "get_weather"
PARIS = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
TIME = '{"name": "get_time", "arguments": {}}'

LLAMA4_JSON = [
    Case("llama4_json", "call", '{"name": "get_weather", "parameters": {"city": "Paris"}}<|eot|>',
         calls=((W, {"city": "Paris"}),)),
    Case("llama4_json", "python_block", '<|python_start|>{"name": "get_time", "parameters": {}}<|python_end|>',
         calls=(("get_time", {}),)),
    Case("llama4_json", "plain", "Paris is sunny today.<|eot|>", content="Paris is sunny today."),
]

GRANITE = [
    Case("granite", "granite30_token", "<|tool_call|>[" + PARIS + "]", calls=((W, {"city": "Paris"}),)),
    Case("granite", "granite31_tag_parallel", "<tool_call>[" + PARIS + ", " + TIME + "]<|end_of_text|>",
         calls=((W, {"city": "Paris"}), ("get_time", {}))),
    Case("granite", "bare_list", "[" + TIME + "]", calls=(("get_time", {}),)),
    Case("granite", "thinking", "Here is my thought process:\nThe user asks 2+2.\nHere is my response:\nIt is 4.",
         reasoning="The user asks 2+2.", content="It is 4."),
    Case("granite", "heres_then_call",
         "Here's my thought process:\nNeed the weather.\nHere's my response:\n<|tool_call|>[" + PARIS + "]",
         reasoning="Need the weather.", calls=((W, {"city": "Paris"}),)),
    Case("granite", "response_phrase_in_plain_answer", "Sure. Here is my response: it depends.",
         content="Sure. Here is my response: it depends."),
    Case("granite", "content_then_call", "Let me check.<|tool_call|>[" + PARIS + "]", content="Let me check.",
         calls=((W, {"city": "Paris"}),)),
    Case("granite", "truncated", '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Pa',
         calls=((W, {"city": "Pa"}),)),
]

GRANITE4 = [
    Case("granite4", "call", "I'll check.<tool_call>\n" + PARIS + "\n</tool_call><|end_of_text|>", content="I'll check.",
         calls=((W, {"city": "Paris"}),)),
    Case("granite4", "parallel", "<tool_call>\n" + PARIS + "\n</tool_call>\n<tool_call>\n" + TIME + "\n</tool_call>",
         calls=((W, {"city": "Paris"}), ("get_time", {}))),
]

GRANITE_20B_FC = [
    Case("granite_20b_fc", "two_calls", "<function_call> " + PARIS + " <function_call> " + TIME,
         calls=((W, {"city": "Paris"}), ("get_time", {}))),
    Case("granite_20b_fc", "content_first", "Let me look that up. <function_call> " + PARIS + "<|endoftext|>",
         content="Let me look that up.", calls=((W, {"city": "Paris"}),)),
    Case("granite_20b_fc", "plain", "Hello! <|endoftext|>", content="Hello!"),
]

INTERNLM = [
    Case("internlm", "call", 'Sure.<|action_start|><|plugin|>\n{"name": "get_weather", "parameters": '
         '{"city": "Shanghai"}}<|action_end|><|im_end|>', content="Sure.", calls=((W, {"city": "Shanghai"}),)),
    Case("internlm", "arguments_key", "<|action_start|><|plugin|>\n" + TIME + "<|action_end|>",
         calls=(("get_time", {}),)),
    Case("internlm", "plain", "Hi there.<|im_end|>", content="Hi there."),
]

JAMBA = [
    Case("jamba", "call", "<tool_calls>[" + PARIS + "]</tool_calls><|eom|>", calls=((W, {"city": "Paris"}),)),
    Case("jamba", "content_and_parallel", "Checking both. <tool_calls>[" + PARIS + ", " + TIME + "]</tool_calls>",
         content="Checking both.", calls=((W, {"city": "Paris"}), ("get_time", {}))),
    Case("jamba", "plain", "The weather is 15°C.<|eom|>", content="The weather is 15°C."),
]

XLAM = [
    Case("xlam", "bare_list", "[" + PARIS + ", " + TIME + "]", calls=((W, {"city": "Paris"}), ("get_time", {}))),
    Case("xlam", "json_fence", "```json\n[" + PARIS + "]\n```", calls=((W, {"city": "Paris"}),)),
    Case("xlam", "after_think", "<think>Need weather.</think>\n[" + PARIS + "]", reasoning="Need weather.",
         calls=((W, {"city": "Paris"}),)),
    Case("xlam", "tool_calls_token", "[TOOL_CALLS][" + TIME + "]", calls=(("get_time", {}),)),
    Case("xlam", "tool_call_tags", "<tool_call>[" + TIME + "]</tool_call>", calls=(("get_time", {}),)),
    Case("xlam", "code_fence_stays_content", "Use:\n```python\nprint(1)\n```\nDone.",
         content="Use:\n```python\nprint(1)\n```\nDone."),
    Case("xlam", "plain", "No tool fits this request.", content="No tool fits this request."),
]

PHI4_MINI = [
    Case("phi4_mini_json", "call", "functools[" + PARIS + ", " + TIME + "]",
         calls=((W, {"city": "Paris"}), ("get_time", {}))),
    Case("phi4_mini_json", "content_first", "Let me check. functools[" + PARIS + "]<|end|>",
         content="Let me check.", calls=((W, {"city": "Paris"}),)),
    Case("phi4_mini_json", "word_in_text", "Use functools.partial to bind arguments.",
         content="Use functools.partial to bind arguments."),
]

HUNYUAN = [
    Case("hunyuan_a13b", "think_answer_call",
         "<think>\nThe user wants weather.\n</think>\n<answer>\n<tool_calls>[" + PARIS + "]</tool_calls>\n</answer>",
         reasoning="The user wants weather.", calls=((W, {"city": "Paris"}),)),
    Case("hunyuan_a13b", "think_answer_text", "<think>\nEasy.\n</think>\n<answer>\n助手：It is 4.\n</answer>",
         reasoning="Easy.", content="It is 4."),
    Case("hunyuan_a13b", "plain_reply_prefix", "助手：你好！有什么可以帮你？<|eos|>", content="你好！有什么可以帮你？"),
    Case("hunyuan_a13b", "call_inside_think_stays",
         "<think>Format: <tool_calls>[" + TIME + "]</tool_calls></think><answer>Fine.</answer>",
         reasoning="Format: <tool_calls>[" + TIME + "]</tool_calls>", content="Fine."),
]

ERNIE45 = [
    Case("ernie45", "call", "The user wants weather in Beijing.\n</think>\n\n<tool_call>\n"
         '{"name": "get_weather", "arguments": {"city": "Beijing"}}\n</tool_call>\n',
         reasoning="The user wants weather in Beijing.", calls=((W, {"city": "Beijing"}),)),
    Case("ernie45", "response_tags", "abc\n</think>\n\n<response>\ndef\n</response>\n", reasoning="abc",
         content="def"),
    Case("ernie45", "no_response_tags", "abc\n</think>\ndef", reasoning="abc", content="def"),
    Case("ernie45", "truncated_reasoning", "Still thinking about", reasoning="Still thinking about"),
]

LONGCAT = [
    Case("longcat", "call", "I'll check.<longcat_tool_call>\n" + PARIS + "\n</longcat_tool_call>",
         content="I'll check.", calls=((W, {"city": "Paris"}),)),
    Case("longcat", "prompt_opened_reasoning", "Plan it.</longcat_think>\nDone.", reasoning="Plan it.",
         content="Done.", starts_in_reasoning=True),
    Case("longcat", "written_think", "<longcat_think>Hmm.</longcat_think>Yes.", reasoning="Hmm.", content="Yes."),
]

GIGACHAT3 = [
    Case("gigachat3", "call", "Сейчас узнаю.<|message_sep|>\n\nfunction call<|role_sep|>\n"
         '{"name": "get_weather", "arguments": {"city": "Москва"}}',
         content="Сейчас узнаю.", calls=((W, {"city": "Москва"}),)),
    Case("gigachat3", "call_only", "function call<|role_sep|>\n" + TIME + "</s>", calls=(("get_time", {}),)),
    Case("gigachat3", "plain", "Привет! Чем помочь?</s>", content="Привет! Чем помочь?"),
    # GigaChat 3.1: the call after a <|function_call|> token instead of "function call<|role_sep|>"
    Case("gigachat3", "function_call_token", "Сейчас узнаю.<|message_sep|>\n\n<|function_call|>"
         '{"name": "get_weather", "arguments": {"city": "Москва"}}</s>',
         content="Сейчас узнаю.", calls=((W, {"city": "Москва"}),)),
    Case("gigachat3", "function_call_token_only", "<|function_call|>\n" + TIME, calls=(("get_time", {}),)),
]

APERTUS = [
    Case("apertus", "reasoning_then_calls",
         '<|inner_prefix|>Need weather.<|inner_suffix|>Checking.<|tools_prefix|>[{"get_weather": {"city": "Bern"}}, '
         '{"get_time": {}}]<|tools_suffix|>', reasoning="Need weather.", content="Checking.",
         calls=((W, {"city": "Bern"}), ("get_time", {}))),
    Case("apertus", "call_ends_reasoning",
         '<|inner_prefix|>Let me look.<|tools_prefix|>[{"get_weather": {"city": "Zurich", "days": 2}}]<|tools_suffix|>',
         reasoning="Let me look.", calls=((W, {"city": "Zurich", "days": 2}),)),
    Case("apertus", "plain", "Grüezi!<|assistant_end|>", content="Grüezi!"),
    Case("apertus", "truncated", '<|tools_prefix|>[{"get_weather": {"city": "Ge', calls=((W, {"city": "Ge"}),)),
]

CASES = (LLAMA4_JSON + GRANITE + GRANITE4 + GRANITE_20B_FC + INTERNLM + JAMBA + XLAM + PHI4_MINI + HUNYUAN + ERNIE45 + LONGCAT
         + GIGACHAT3 + APERTUS)
